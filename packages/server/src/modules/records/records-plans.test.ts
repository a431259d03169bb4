// The back office's list of orders (records-store.ts, searchOrders) is read newest first from the
// indexes of migration 0017, ascending since migration 0029 and read backward (docs/decisions.md,
// "Back office records"): descending, each new order went to the front of its entries and the
// index grew by half-empty pages. On PGlite and PostgreSQL.

import assert from "node:assert/strict";
import crypto from "node:crypto";
import { after, before, test } from "node:test";
import { CompiledQuery, sql } from "kysely";
import type { DatabaseHandle } from "../../db/database.ts";
import { insertClient } from "../../testing/fixtures.ts";
import { openTestDatabase } from "../../testing/harness.ts";
import { type OrderSearch, searchOrders, searchOrdersQuery } from "./records-store.ts";

let database: DatabaseHandle;
let partnerId: string;
let clientId: number;

before(async () => {
  database = await openTestDatabase();
  partnerId = crypto.randomUUID();
  await sql`INSERT INTO partners (id, name) VALUES (${partnerId}, 'Records plans')`.execute(database.db);
  const clients: number[] = [];
  for (let n = 1; n <= 10; n++) clients.push((await insertClient(database.db, partnerId, n)).id);
  clientId = clients[0]!;
  // 1,000 orders a minute apart over ten clients; one in ten a withdrawal, by card, rejected, so
  // that a filter on any of them is selective enough for its own index.
  await sql`
    INSERT INTO orders (partner_id, client_id, partner_order_ref, type, source, status, debit,
      debit_asset_id, fee_asset_id, created_at, transitioned_at, updated_at)
    SELECT ${partnerId}, (${clients}::int8[])[1 + i % 10], 'p-' || i,
      CASE WHEN i % 10 = 3 THEN 'withdrawal' ELSE 'deposit' END,
      CASE WHEN i % 10 = 5 THEN 'card' ELSE 'bank' END,
      CASE WHEN i % 10 = 7 THEN 'rejected' WHEN i % 2 = 0 THEN 'completed' ELSE 'failed' END,
      1, 'AED', 'AED', t, t, t
    FROM generate_series(1, 1000) i,
      LATERAL (SELECT timestamptz '2026-01-01' + i * interval '1 minute' AS t) x`.execute(database.db);
  await sql`ANALYZE orders`.execute(database.db);
});

after(async () => {
  await database.close();
});

const rolledBack = new Error("rolled back");

const none: OrderSearch = {
  partnerId: null,
  clientId: null,
  type: null,
  source: null,
  status: null,
  from: null,
  to: null,
};

test("migration 0029: the back office's five indexes of orders by time are ascending", async () => {
  const { rows } = await sql<{ name: string; columns: string; descending: boolean }>`
    SELECT c.relname AS name,
           pg_get_indexdef(i.indexrelid) AS columns,
           EXISTS (SELECT FROM unnest(i.indoption) o WHERE (o & 1) = 1) AS descending
      FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
     WHERE i.indrelid = 'orders'::regclass
       AND c.relname IN ('orders_created', 'orders_client_created', 'orders_status_created',
                         'orders_type_created', 'orders_source_created')
     ORDER BY c.relname`.execute(database.db);
  assert.deepEqual(
    rows.map((r) => [r.name, r.columns.replace(/^.* USING btree /, ""), r.descending]),
    [
      ["orders_client_created", "(client_id, created_at, id)", false],
      ["orders_created", "(created_at, id)", false],
      ["orders_source_created", "(source, created_at, id)", false],
      ["orders_status_created", "(status, created_at, id)", false],
      ["orders_type_created", "(type, created_at, id)", false],
    ],
  );
});

test("each filter of the back office's list is read backward from its index, never sorted", async () => {
  const cursor = { at: "2026-01-01T12:00:00.000Z", id: 1_000_000 };
  const cases: [string, OrderSearch, string][] = [
    ["no filter", none, "orders_created"],
    ["a client", { ...none, clientId }, "orders_client_created"],
    ["a status", { ...none, status: "rejected" }, "orders_status_created"],
    ["a type", { ...none, type: "withdrawal" }, "orders_type_created"],
    ["a source", { ...none, source: "card" }, "orders_source_created"],
  ];
  const byTime = [
    "orders_created",
    "orders_client_created",
    "orders_status_created",
    "orders_type_created",
    "orders_source_created",
    "orders_partner_created",
    "orders_partner_client_created",
  ];
  for (const [name, filter, index] of cases) {
    // The other indexes by time dropped (and put back: the transaction is rolled back), the table
    // scan and the sort priced out: the plan says whether this index gives the list its order.
    let plan = "";
    await database.db
      .transaction()
      .execute(async (tx) => {
        for (const other of byTime.filter((i) => i !== index))
          await sql`DROP INDEX ${sql.id(other)}`.execute(tx);
        await sql`SET LOCAL enable_seqscan = off`.execute(tx);
        await sql`SET LOCAL enable_bitmapscan = off`.execute(tx);
        await sql`SET LOCAL enable_sort = off`.execute(tx);
        const compiled = searchOrdersQuery(tx, filter, cursor, 20).compile();
        const { rows } = await tx.executeQuery<{ "QUERY PLAN": string }>(
          CompiledQuery.raw(`EXPLAIN (COSTS OFF) ${compiled.sql}`, [...compiled.parameters]),
        );
        plan = rows.map((r) => r["QUERY PLAN"]).join("\n");
        throw rolledBack;
      })
      .catch((err: unknown) => {
        if (err !== rolledBack) throw err;
      });
    assert.match(plan, new RegExp(`Index Scan Backward using ${index} on orders`), `${name}:\n${plan}`);
    assert.doesNotMatch(plan, /Sort/, `${name}:\n${plan}`);
  }
  const left = await sql<{ n: number }>`
    SELECT count(*)::int AS n FROM unnest(${byTime}::text[]) i WHERE to_regclass(i) IS NOT NULL`.execute(
    database.db,
  );
  assert.equal(left.rows[0]?.n, byTime.length, "the indexes dropped in the test are back");
});

test("the list is newest first, a page after another going on where it stopped", async () => {
  const first = await searchOrders(database.db, { ...none, status: "completed" }, null, 50);
  const second = await searchOrders(
    database.db,
    { ...none, status: "completed" },
    { at: first.at(-1)!.created_at, id: first.at(-1)!.id },
    500,
  );
  const all = [...first, ...second];
  assert.equal(all.length, 500);
  assert.ok(all.every((o) => o.status === "completed"));
  for (let i = 1; i < all.length; i++) {
    assert.ok(all[i - 1]!.created_at > all[i]!.created_at, `order ${i} out of order`);
  }
});
