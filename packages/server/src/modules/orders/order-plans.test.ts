// How PostgreSQL plans and reads a page of orders (orders-store.ts; docs/decisions.md, "A first
// page planned once", "A page planned once for any partner" and "A page under a status
// or a source found on the index"):
//   - the page's statement is prepared, and PostgreSQL runs a prepared statement on the plan it
//     made once only while that plan is estimated to cost no more than the plans made for the
//     runs' values. A LIMIT given as a parameter it estimates at a tenth of the rows that match, so
//     that for a client of a few thousand orders every page was planned anew, at more cost than its
//     run. A first page writes its rows as a constant. The partner is read through a sub-select,
//     unknown to either plan: else the pages of a partner smaller than the others were planned anew
//     at each run;
//   - a status or a source stays known to the plan: under one that no order has, the page is found
//     on the index by status (or source), not by reading the partner's index to its end;
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
  let smallId: string;
  let smallClientId: number;

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
    // Another partner's 1,000 clients, of three orders each, in 2025: beside it, on the tree before,
    // even the first partner's page with no filter was planned at each run.
    const manyId = crypto.randomUUID();
    await sql`INSERT INTO partners (id, name) VALUES (${manyId}, 'Many')`.execute(db);
    await sql`
      INSERT INTO clients (partner_id, partner_client_id, account_type, name, birth_date, status, email, phone,
        residency_id, citizenship_id, place_of_birth_id, government_id_number, government_id_doe, address,
        employment, trading_volume, account_purpose)
      SELECT ${manyId}, 'many-' || i, 'personal', 'n', '1990-01-01', 'verified', 'many' || i || '@x.test',
        '+9716' || lpad(i::text, 8, '0'), 'ae', 'ae', 'ae', 'many-' || i, '2030-01-01', '{}',
        '{"status":"retired"}', 'x', '{long_term_investment}'
      FROM generate_series(1, 1000) i`.execute(db);
    await sql`
      INSERT INTO orders (partner_id, client_id, partner_order_ref, type, source, status, debit,
        debit_asset_id, fee_asset_id, created_at, transitioned_at, updated_at)
      SELECT ${manyId}, c.id, 'm-' || c.id || '-' || k, 'deposit', 'bank',
        (ARRAY['completed','rejected','failed'])[k], 1, 'AED', 'AED', t, t, t
      FROM clients c, generate_series(1, 3) k,
        LATERAL (SELECT timestamptz '2025-01-01' + (c.id * 3 + k) * interval '1 minute' AS t) x
      WHERE c.partner_id = ${manyId}`.execute(db);
    // And a partner of one client and 30 orders, beside the first's 6,000.
    smallId = crypto.randomUUID();
    await sql`INSERT INTO partners (id, name) VALUES (${smallId}, 'Small')`.execute(db);
    smallClientId = (await insertClient(db, smallId, 3)).id;
    await sql`
      INSERT INTO orders (partner_id, client_id, partner_order_ref, type, source, status, debit,
        debit_asset_id, fee_asset_id, created_at, transitioned_at, updated_at)
      SELECT ${smallId}, ${smallClientId}, 's-' || i, 'deposit', 'bank', 'completed', 1, 'AED', 'AED', t, t, t
      FROM generate_series(1, 30) i,
        LATERAL (SELECT timestamptz '2026-03-01' + i * interval '1 minute' AS t) x`.execute(db);
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
    await sql`ANALYZE clients`.execute(db);
    await sql`ANALYZE order_counts, order_slot_counts`.execute(db);
  });
  after(async () => {
    await database.close();
  });

  const none: OrderFilter = { clientId: null, sources: [], statuses: [], from: null, to: null };

  test("a first page runs on one plan after PostgreSQL's five, whatever partner it is for", async () => {
    // The small partner's first: a statement's plan made once is weighed against the mean of the
    // plans made for each run so far, on that connection, whoever they were for.
    const shapes: [string, string, OrderFilter][] = [
      ["the small partner, no filter", smallId, none],
      ["the small partner's client", smallId, { ...none, clientId: smallClientId }],
      ["no filter", partnerId, none],
      ["one client", partnerId, { ...none, clientId }],
      ["one client, one status", partnerId, { ...none, clientId, statuses: ["completed"] }],
    ];
    // One transaction: one connection, whose prepared statements pg_prepared_statements lists.
    await db.transaction().execute(async (tx) => {
      for (const [label, partner, filter] of shapes) {
        const read = async () => {
          const page = await listOrders(tx, partner, filter, 1, 10);
          assert.equal(page.rows.length, 10, label);
        };
        for (let run = 0; run < 5; run++) await read();
        // PostgreSQL plans each of a statement's first five runs for its values, then weighs the
        // plan made once: taken, it serves the next three (every run, for a statement that another
        // partner's page of the same shape ran five times before).
        const before = await genericRuns(tx);
        for (let run = 0; run < 3; run++) await read();
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

describe("orders: a page under a status no order has", { skip: !onPostgres }, () => {
  let database: DatabaseHandle;
  let db: Db;
  let partnerId: string;

  before(async () => {
    database = await openTestDatabase();
    db = database.db;
    partnerId = crypto.randomUUID();
    await sql`INSERT INTO partners (id, name) VALUES (${partnerId}, 'Statuses')`.execute(db);
    const clientId = (await insertClient(db, partnerId, 1)).id;
    // 20,000 orders, completed and failed, from bank and card, 1,000 a statement: the count rows of
    // one client (and of its slot) are updated once per order, and in one transaction each update
    // walks past every version the transaction made before it (20,000 in one statement: 9 s).
    for (let from = 1; from <= 20_000; from += 1_000)
      await sql`
        INSERT INTO orders (partner_id, client_id, partner_order_ref, type, source, status, debit,
          debit_asset_id, fee_asset_id, created_at, transitioned_at, updated_at)
        SELECT ${partnerId}, ${clientId}, 'r-' || i, 'deposit', (ARRAY['bank','card'])[1 + i % 2],
          (ARRAY['completed','failed'])[1 + i % 2], 1, 'AED', 'AED', t, t, t
        FROM generate_series(${from}::int, ${from + 999}::int) i,
          LATERAL (SELECT timestamptz '2026-01-01' + i * interval '1 minute' AS t) x`.execute(db);
    await sql`VACUUM ANALYZE orders`.execute(db);
    await sql`ANALYZE order_counts, order_slot_counts`.execute(db);
  });
  after(async () => {
    await database.close();
  });

  const none: OrderFilter = { clientId: null, sources: [], statuses: [], from: null, to: null };

  test("a page under a status or a source that no order has is found on the index by it, not on the partner's", async () => {
    await db.transaction().execute(async (tx) => {
      /** Blocks of orders and of its indexes this transaction has read. */
      const blocksRead = async () => {
        const { rows } = await sql<{ n: string }>`
          SELECT sum(pg_stat_get_xact_blocks_fetched(i.oid)) AS n FROM pg_class i
           WHERE i.oid = 'orders'::regclass
              OR i.oid IN (SELECT indexrelid FROM pg_index WHERE indrelid = 'orders'::regclass)`.execute(tx);
        return Number(rows[0]?.n);
      };
      const filters: [string, OrderFilter][] = [
        ["expired", { ...none, statuses: ["expired"] }],
        ["limit", { ...none, sources: ["limit"] }],
      ];
      for (const [label, filter] of filters) {
        for (let run = 1; run <= 8; run++) {
          const before = await blocksRead();
          assert.deepEqual(await listOrders(tx, partnerId, filter, 1, 10), { rows: [], total: 0 }, label);
          // The plan sees the status (or source), and that no order has it: it reads the index by
          // status (or source), 26 to 50 blocks here with what planning reads. A plan made for any
          // status reads the partner's index to its end to find none: 168 to 201 blocks here,
          // 8,542 at a million orders.
          const blocks = (await blocksRead()) - before;
          assert.ok(blocks <= 100, `${label}, run ${run}: ${blocks} blocks`);
        }
      }
    });
  });
});
