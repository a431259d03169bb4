// How PostgreSQL plans and reads a page of orders (orders-store.ts; docs/decisions.md, "A first
// page planned once" and "A page under a status or a source found on the index"):
//   - the page's statement is prepared, and PostgreSQL runs a prepared statement on the plan it
//     made once only while that plan is estimated to cost no more than one made for the run's
//     values. A LIMIT given as a parameter it estimates at a tenth of the rows that match, so that
//     for a client of a few thousand orders every page was planned anew, at more cost than its run.
//     A first page writes its rows as a constant, and is planned once: here, for a client of 3,000
//     orders, under the filters whose plan made once is estimated no dearer;
//   - a page under a status passes over the orders of other statuses on the index, which carries
//     each order's status and source (migration 0027), without reading them from the table.
// On PostgreSQL only: PGlite keeps no count of the plans it made nor of the blocks it read.

import assert from "node:assert/strict";
import crypto from "node:crypto";
import { after, before, describe, test } from "node:test";
import { setTimeout as delay } from "node:timers/promises";
import { sql } from "kysely";
import type { DatabaseHandle, Db } from "../../db/database.ts";
import type { Tx } from "../../db/transaction.ts";
import { insertClient } from "../../testing/fixtures.ts";
import { onPostgres, openTestDatabase } from "../../testing/harness.ts";
import { listOrders, type OrderFilter } from "./orders-store.ts";

/** How many times the connection's prepared statements have run on the plan each made once. */
async function genericRuns(tx: Tx): Promise<number> {
  const { rows } = await sql<{ n: string }>`
    SELECT coalesce(sum(generic_plans), 0) AS n FROM pg_prepared_statements`.execute(tx);
  return Number(rows[0]?.n);
}

describe("orders: how a page is planned and read", { skip: !onPostgres }, () => {
  let database: DatabaseHandle;
  let db: Db;
  let partnerId: string;
  let clientId: number;

  before(async () => {
    database = await openTestDatabase();
    db = database.db;
    partnerId = crypto.randomUUID();
    await sql`INSERT INTO partners (id, name) VALUES (${partnerId}, 'Plans')`.execute(db);
    clientId = (await insertClient(db, partnerId, 1)).id;
    const otherId = (await insertClient(db, partnerId, 2)).id;
    // The client's 3,000 orders, completed and rejected; another client's 3,000, all failed: failed
    // is the partner's commonest status, so a page of the client's failed orders is planned on the
    // client's index, not on the index by status (which would find none at once).
    const write = (client: number, prefix: string, statuses: string) => sql`
      INSERT INTO orders (partner_id, client_id, partner_order_ref, type, source, status, debit,
        debit_asset_id, fee_asset_id, created_at, transitioned_at, updated_at)
      SELECT ${partnerId}, ${client}, ${prefix} || i, 'deposit', (ARRAY['bank','card'])[1 + i % 2],
        (${statuses}::text[])[1 + i % 2], 1, 'AED', 'AED', t, t, t
      FROM generate_series(1, 3000) i,
        LATERAL (SELECT timestamptz '2026-01-01' + i * interval '1 minute' AS t) x`;
    await write(clientId, "r-", "{completed,rejected}").execute(db);
    await write(otherId, "o-", "{failed,failed}").execute(db);
    // Vacuumed until every page of orders is marked all-visible, as autovacuum leaves orders that
    // are no longer new: an index-only scan then reads nothing of the table for them. VACUUM marks
    // a page only once no transaction that began before its rows were committed still runs, and
    // other test files' transactions on the same cluster count: it is run again until it has, at
    // most 100 times, 0.1 s apart.
    for (let run = 1; ; run++) {
      await sql`VACUUM ANALYZE orders`.execute(db);
      const { rows } = await sql<{ visible: boolean }>`
        SELECT relallvisible = relpages AS visible FROM pg_class WHERE oid = 'orders'::regclass`.execute(db);
      if (rows[0]?.visible === true) break;
      if (run === 100) throw new Error("orders' pages never all-visible: an older transaction kept running");
      await delay(100);
    }
    await sql`ANALYZE order_counts`.execute(db);
  });
  after(async () => {
    await database.close();
  });

  const none: OrderFilter = { clientId: null, sources: [], statuses: [], from: null, to: null };

  test("the first page of a client of 3,000 orders runs on one plan after PostgreSQL's five", async () => {
    const shapes: [string, OrderFilter][] = [
      ["no filter", none],
      ["one client", { ...none, clientId }],
      ["one client, one status", { ...none, clientId, statuses: ["completed"] }],
    ];
    // One transaction: one connection, whose prepared statements pg_prepared_statements lists.
    await db.transaction().execute(async (tx) => {
      for (const [label, filter] of shapes) {
        const before = await genericRuns(tx);
        for (let run = 0; run < 8; run++) {
          const page = await listOrders(tx, partnerId, filter, 1, 10);
          assert.equal(page.rows.length, 10, label);
        }
        // PostgreSQL plans each of the first five runs for its values, then weighs the plan made
        // once: taken, it serves the last three.
        assert.equal((await genericRuns(tx)) - before, 3, label);
      }
    });
  });

  test("a client's page under a status it has none of reads none of its orders from the table", async () => {
    await db.transaction().execute(async (tx) => {
      /** Blocks of the orders table this transaction has read (the current transaction's count). */
      const tableBlocks = async () => {
        const { rows } = await sql<{ n: string }>`
          SELECT pg_stat_get_xact_blocks_fetched('orders'::regclass) AS n`.execute(tx);
        return Number(rows[0]?.n);
      };
      for (const page of [1, 2]) {
        const before = await tableBlocks();
        const read = await listOrders(tx, partnerId, { ...none, clientId, statuses: ["failed"] }, page, 10);
        assert.deepEqual(read, { rows: [], total: 0 });
        // Every one of the client's 3,000 orders is passed over on the index, none read from the
        // table: 53 blocks before migration 0027. What is still counted to the table does not grow
        // with the client's orders: a block of its visibility map for the index-only scan, and,
        // for a page planned for its values (the second), a few read while planning (9 blocks on
        // PostgreSQL 15; auto_explain shows the scan itself reading no order: Heap Fetches 0).
        const blocks = (await tableBlocks()) - before;
        assert.ok(blocks <= 20, `page ${page}: ${blocks} blocks`);
      }
      // Under a status it has, the page reads its own orders, and only a few blocks for them.
      const before = await tableBlocks();
      const read = await listOrders(tx, partnerId, { ...none, clientId, statuses: ["rejected"] }, 1, 10);
      assert.equal(read.rows.length, 10);
      assert.ok(read.rows.every((r) => r.status === "rejected"));
      const blocks = (await tableBlocks()) - before;
      assert.ok(blocks > 0 && blocks <= 20, `${blocks} blocks`);
    });
  });
});
