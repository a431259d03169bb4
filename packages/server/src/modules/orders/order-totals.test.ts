// The orders list's `total` (docs/reference.md §8 pagination; docs/decisions.md, "An orders page's
// total from kept counts"): filtered by nothing but client, source and status, it is read from the
// counts the database keeps per client, source and status (migrations 0019, 0020); with a range of
// dates, from them less the orders the range leaves out, unless it keeps less time than it leaves
// out, when it is counted. Either way it is the number of orders the list holds, for every way an
// order is made; a refused request counts nothing; the database refuses what would make the counts false; orders written before the
// migrations are counted by them; a change of an order's status moves its count.

import assert from "node:assert/strict";
import crypto from "node:crypto";
import { after, before, describe, test } from "node:test";
import { sql } from "kysely";
import type { DatabaseHandle, Db } from "../../db/database.ts";
import { migrate } from "../../db/migrate.ts";
import type { Tx } from "../../db/transaction.ts";
import { systemClock } from "../../platform/clock.ts";
import { pinBtcAed } from "../../testing/counted-process.ts";
import { insertClient } from "../../testing/fixtures.ts";
import { startTestContext, type TestContext, type TestPartner } from "../../testing/harness.ts";
import { openDatabaseBefore } from "../../testing/migrations.ts";
import { englishCountryName, seedCatalog } from "../catalog/index.ts";
import { houseSlot } from "../ledger/legs.ts";
import { OrdersService } from "./orders-service.ts";
import { listOrders, type OrderFilter } from "./orders-store.ts";

const noFilter: OrderFilter = { clientId: null, sources: [], statuses: [], from: null, to: null };

/** The orders in the table, by partner and client: what every total must agree with. */
async function tableCounts(
  db: Db,
  partnerId: string,
): Promise<{ all: number; byClient: Map<number, number> }> {
  const rows = await db
    .selectFrom("orders")
    .where("partner_id", "=", partnerId)
    .select((eb) => ["client_id", eb.fn.countAll<string>().as("n")])
    .groupBy("client_id")
    .execute();
  const byClient = new Map(rows.map((r) => [r.client_id, Number(r.n)]));
  return { all: [...byClient.values()].reduce((a, b) => a + b, 0), byClient };
}

describe("orders: the list's total", () => {
  let ctx: TestContext;
  let other: TestPartner;
  const clients: { id: number; partnerClientId: string }[] = [];
  let ref = 0;

  before(async () => {
    ctx = await startTestContext();
    const db = ctx.services.database.db;
    clients.push(await insertClient(db, ctx.partner.id, 1), await insertClient(db, ctx.partner.id, 2));
    other = await ctx.addPartner({ name: "Other" });
    await insertClient(db, other.id, 1);
    await pinBtcAed(ctx);
  });
  after(async () => {
    await ctx.close();
  });

  const post = (url: string, body: object, partner = ctx.partner) =>
    ctx.signed({ method: "POST", url, body, partner });
  const total = async (query = "", partner = ctx.partner) => {
    const res = await ctx.signed({ method: "GET", url: `/v1/partner/orders${query}`, partner });
    assert.equal(res.statusCode, 200, res.body);
    return res.json().total as number;
  };
  /** Every total the list answers agrees with the table: the partner's, each client's, a filtered one. */
  async function assertTotals(): Promise<number> {
    const db = ctx.services.database.db;
    const counts = await tableCounts(db, ctx.partner.id);
    assert.equal(await total(), counts.all, "no filter");
    for (const c of clients)
      assert.equal(
        await total(`?partner_client_id=${c.partnerClientId}`),
        counts.byClient.get(c.id) ?? 0,
        c.partnerClientId,
      );
    // By status and by source, the kinds this file's orders are made with.
    for (const [column, value] of [
      ["status", "completed"],
      ["status", "rejected"],
      ["source", "bank"],
      ["source", "market"],
    ] as const) {
      const n = await db
        .selectFrom("orders")
        .where("partner_id", "=", ctx.partner.id)
        .where(column, "=", value)
        .select((eb) => eb.fn.countAll<string>().as("n"))
        .executeTakeFirstOrThrow();
      assert.equal(await total(`?${column}=${value}`), Number(n.n), `${column}=${value}`);
    }
    assert.equal(await total("", other), (await tableCounts(db, other.id)).all, "the other partner");
    return counts.all;
  }

  test("every way an order is made adds one, to its client's total and the partner's; a refused request none", async () => {
    assert.equal(await assertTotals(), 0);
    const fund = (client: string, amount: string, partner = ctx.partner) =>
      post(
        "/v1/partner/deposits",
        { partner_client_id: client, asset_id: "AED", amount, partner_order_ref: `t-${++ref}` },
        partner,
      );
    assert.equal((await fund("client-1", "5000")).statusCode, 200);
    assert.equal((await fund("client-2", "10")).statusCode, 200);
    assert.equal((await fund("client-1", "7", other)).statusCode, 200);
    assert.equal(await assertTotals(), 2);

    const withdraw = (client: string, amount: string) =>
      post("/v1/partner/withdrawals", {
        partner_client_id: client,
        asset_id: "AED",
        amount,
        partner_order_ref: `t-${++ref}`,
      });
    assert.equal((await withdraw("client-2", "4")).statusCode, 200);
    const usedRef = `t-${ref}`;
    // Refused: funds short (3005), a reference already used (2020), an amount that is no amount (422).
    const short = await withdraw("client-2", "100");
    assert.equal(short.json().code, 3005, short.body);
    const reused = await post("/v1/partner/deposits", {
      partner_client_id: "client-1",
      asset_id: "AED",
      amount: "1",
      partner_order_ref: usedRef,
    });
    assert.equal(reused.json().code, 2020, reused.body);
    assert.equal((await fund("client-1", "-1")).statusCode, 422);
    assert.equal(await assertTotals(), 3);

    // A trade executed; and one whose client spent its funds between quote and execute: its order
    // is made, rejected, and counted. A quote refused for funds short (3005) makes none.
    const quote = async (client: string, baseAmount: string) => {
      const q = await post("/v1/partner/quotes", {
        partner_client_id: client,
        asset_pair: "BTC-AED",
        side: "buy",
        base_amount: baseAmount,
      });
      assert.equal(q.statusCode, 200, q.body);
      return q.json().result.token as string;
    };
    const execute = async (client: string, token: string) => {
      const e = await post("/v1/partner/quotes/execute", { partner_client_id: client, token });
      assert.equal(e.statusCode, 200, e.body);
      return e.json().result.status as string;
    };
    assert.equal(await execute("client-1", await quote("client-1", "0.01")), "completed");
    const refusedQuote = await post("/v1/partner/quotes", {
      partner_client_id: "client-2",
      asset_pair: "BTC-AED",
      side: "buy",
      base_amount: "0.01",
    });
    assert.equal(refusedQuote.json().code, 3005, refusedQuote.body);
    assert.equal(await assertTotals(), 4);
    assert.equal((await fund("client-2", "4000")).statusCode, 200);
    const token = await quote("client-2", "0.01");
    assert.equal((await withdraw("client-2", "4000")).statusCode, 200);
    assert.equal(await execute("client-2", token), "rejected");
    assert.equal(await assertTotals(), 7);
    // A quote alone is no order; an execute of a spent token (4008) makes none.
    const q = await post("/v1/partner/quotes", {
      partner_client_id: "client-1",
      asset_pair: "BTC-AED",
      side: "buy",
      base_amount: "0.001",
    });
    assert.equal(q.statusCode, 200, q.body);
    assert.equal(await assertTotals(), 7);
    const executed = { partner_client_id: "client-1", token: q.json().result.token };
    assert.equal((await post("/v1/partner/quotes/execute", executed)).statusCode, 200);
    assert.equal((await post("/v1/partner/quotes/execute", executed)).json().code, 4008);
    assert.equal(await assertTotals(), 8);
  });

  test("filtered by client, source and status alone the total is the kept count; a range of dates reads it too unless it keeps less time than it leaves out", async () => {
    const db = ctx.services.database.db;
    const c1 = clients[0]!;
    // The first and last order's times, to the microsecond, and one microsecond inside each.
    const { rows } = await sql<{ first: string; second: string; last: string; before_last: string }>`
      SELECT to_char(min(created_at) AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS first,
             to_char((min(created_at) + interval '1 microsecond') AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS second,
             to_char(max(created_at) AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS last,
             to_char((max(created_at) - interval '1 microsecond') AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS before_last
        FROM orders WHERE partner_id = ${ctx.partner.id}`.execute(db);
    const t = rows[0]!;
    const totals = async () => ({
      all: await total(),
      c1: await total("?partner_client_id=client-1"),
      c2: await total("?partner_client_id=client-2"),
      bank: await total("?source=bank"),
      market: await total("?source=market"),
      completed: await total("?status=completed"),
      rejected: await total("?status=rejected"),
      c1Either: await total("?partner_client_id=client-1&status=completed&status=rejected"),
      c1BankCompleted: await total("?partner_client_id=client-1&source=bank&source=card&status=completed"),
      // Ranges that leave none of the partner's (or the client's) orders out: the kept count.
      since2000: await total("?from_datetime=2000-01-01"),
      c1Until2100: await total("?partner_client_id=client-1&status=completed&to_datetime=2100-01-01"),
      firstToLast: await total(`?from_datetime=${t.first}&to_datetime=${t.last}`),
      widest: await total("?from_datetime=0100-01-01&to_datetime=9999-12-31T23:59:59-23:59"),
      // Ranges that leave out less time than they keep (one order on a side, by a microsecond):
      // the kept count less the orders left out, counted.
      fromSecond: await total(`?from_datetime=${t.second}`),
      untilBeforeLast: await total(`?to_datetime=${t.before_last}&source=bank&source=card&source=market`),
      secondToBeforeLast: await total(`?from_datetime=${t.second}&to_datetime=${t.before_last}`),
      c1CompletedFromSecond: await total(
        `?partner_client_id=client-1&status=completed&from_datetime=${t.second}`,
      ),
      // Ranges that keep less time than they leave out: counted.
      firstOnly: await total(`?from_datetime=${t.first}&to_datetime=${t.first}`),
      until2000: await total("?to_datetime=2000-01-01"),
      fromTheLastDate: await total("?from_datetime=9999-12-31T23:59:59-23:59"),
      // A range that ends before it starts holds nothing (counted, never the counts less both sides).
      backwards: await total(`?from_datetime=${t.before_last}&to_datetime=${t.second}`),
    });
    const before = await totals();
    assert.ok(before.c1BankCompleted > 0 && before.market > 0 && before.rejected > 0);
    assert.ok(before.since2000 === before.all && before.firstToLast === before.all && before.c1Until2100 > 0);
    assert.equal(before.fromSecond, before.all - 1);
    assert.equal(before.untilBeforeLast, before.bank + before.market - 1);
    assert.equal(before.secondToBeforeLast, before.all - 2);
    assert.equal(before.firstOnly, 1);
    assert.equal(before.until2000, 0);
    assert.equal(before.fromTheLastDate, 0);
    assert.equal(before.widest, before.all);
    assert.equal(before.backwards, 0);
    // The first order was client-1's deposit, completed: the range leaves out that one.
    assert.ok(before.c1CompletedFromSecond > 0);
    assert.equal(
      before.c1CompletedFromSecond,
      (await total("?partner_client_id=client-1&status=completed")) - 1,
    );
    // Only a changed count shows which totals read it; it is put back at once. A client's totals
    // read the client's rows (order_counts), the partner's its rows per house slot
    // (order_slot_counts, migration 0028).
    const clientRow = (by: number) =>
      sql`UPDATE order_counts SET orders = orders + ${by}
           WHERE client_id = ${c1.id} AND source = 'bank' AND status = 'completed'`.execute(db);
    const slotRow = (by: number) =>
      sql`UPDATE order_slot_counts SET orders = orders + ${by}
           WHERE partner_id = ${ctx.partner.id} AND slot = ${houseSlot(c1.id)}
             AND source = 'bank' AND status = 'completed'`.execute(db);
    const readers = {
      client: ["c1", "c1Either", "c1BankCompleted", "c1Until2100", "c1CompletedFromSecond"],
      partner: [
        "all",
        "bank",
        "completed",
        "since2000",
        "firstToLast",
        "widest",
        "fromSecond",
        "untilBeforeLast",
        "secondToBeforeLast",
      ],
    };
    for (const [shift, moved] of [
      [clientRow, readers.client],
      [slotRow, readers.partner],
    ] as const) {
      await shift(100);
      try {
        const read = await totals();
        for (const [name, value] of Object.entries(read))
          assert.equal(value, before[name as keyof typeof before] + (moved.includes(name) ? 100 : 0), name);
      } finally {
        await shift(-100);
      }
    }
    assert.deepEqual(await totals(), before);
  });

  test("the database refuses what would make the counts false: deleting an order, moving it, truncating", async () => {
    const db = ctx.services.database.db;
    const before = await tableCounts(db, ctx.partner.id);
    const [c1, c2] = clients as [(typeof clients)[0], (typeof clients)[0]];
    const anOrder = await db
      .selectFrom("orders")
      .where("client_id", "=", c1.id)
      .select("id")
      .executeTakeFirstOrThrow();
    for (const statement of [
      sql`DELETE FROM orders WHERE id = ${anOrder.id}`,
      sql`UPDATE orders SET client_id = ${c2.id} WHERE id = ${anOrder.id}`,
      sql`UPDATE orders SET partner_id = ${other.id} WHERE id = ${anOrder.id}`,
      sql`TRUNCATE orders CASCADE`,
    ]) {
      await assert.rejects(statement.execute(db), /orders are kept/);
    }
    assert.deepEqual(await tableCounts(db, ctx.partner.id), before);
    assert.equal(await assertTotals(), before.all);
  });
});

/**
 * A partner with three clients on a schema before `version`, and a writer of its orders (`n` of one
 * kind, references `<tag>-1`…), on which `body` runs; the database is closed after it.
 */
async function beforeMigration(
  version: string,
  body: (earlier: {
    database: DatabaseHandle;
    partnerId: string;
    clients: [number, number, number];
    write(client: number, n: number, source: string, status: string, tag: string, q?: Db | Tx): Promise<void>;
  }) => Promise<void>,
): Promise<void> {
  const { database, close } = await openDatabaseBefore(version);
  try {
    const db = database.db;
    await seedCatalog(db, englishCountryName);
    const partnerId = crypto.randomUUID();
    await sql`INSERT INTO partners (id, name) VALUES (${partnerId}, 'Earlier')`.execute(db);
    const clients: [number, number, number] = [
      (await insertClient(db, partnerId, 1)).id,
      (await insertClient(db, partnerId, 2)).id,
      (await insertClient(db, partnerId, 3)).id,
    ];
    const write = async (
      client: number,
      n: number,
      source: string,
      status: string,
      tag: string,
      q: Db | Tx = db,
    ) => {
      await sql`INSERT INTO orders (partner_id, client_id, partner_order_ref, type, source, status, debit,
                  debit_asset_id, fee_asset_id)
                SELECT ${partnerId}, ${client}, ${tag} || '-' || i, 'deposit', ${source}, ${status}, 1, 'AED', 'AED'
                FROM generate_series(1, ${n}) i`.execute(q);
    };
    await body({ database, partnerId, clients, write });
  } finally {
    await close();
  }
}

describe("migration 0019: orders written before it are counted", () => {
  test("the kept counts start from the orders already there", async () => {
    await beforeMigration("0019", async ({ database, partnerId, clients: [one, two, three], write }) => {
      await write(one, 3, "bank", "completed", "a");
      await write(two, 2, "bank", "completed", "b");
      assert.ok((await migrate(database)).includes("0019_order_counts"));
      const list = (clientId: number | null) =>
        listOrders(database.db, partnerId, { ...noFilter, clientId }, 1, 10).then((r) => r.total);
      assert.equal(await list(null), 5);
      assert.equal(await list(one), 3);
      assert.equal(await list(two), 2);
      // A client without orders has no count row: its total is 0.
      assert.equal(await list(three), 0);
      // Counted from then on, by the trigger.
      await write(two, 1, "bank", "completed", "after");
      assert.equal(await list(null), 6);
      assert.equal(await list(two), 3);
    });
  });
});

describe("migration 0020: the counts by source and status", () => {
  test("start from the orders already there, and follow a change of an order's status", async () => {
    await beforeMigration("0020", async ({ database, partnerId, clients: [one, two], write }) => {
      const db = database.db;
      await write(one, 3, "bank", "completed", "a");
      await write(one, 2, "card", "rejected", "b");
      await write(two, 4, "card", "completed", "c");
      assert.ok((await migrate(database)).includes("0020_order_counts_by_source_and_status"));
      const list = (filter: Partial<OrderFilter>) =>
        listOrders(db, partnerId, { ...noFilter, ...filter }, 1, 10).then((r) => r.total);
      const expect = async (want: number[]) =>
        assert.deepEqual(
          [
            await list({}),
            await list({ clientId: one }),
            await list({ statuses: ["completed"] }),
            await list({ statuses: ["rejected"] }),
            await list({ sources: ["card"] }),
            await list({ clientId: one, sources: ["bank"], statuses: ["completed", "rejected"] }),
            await list({ clientId: two, statuses: ["rejected"] }),
          ],
          want,
        );
      await expect([9, 5, 7, 2, 6, 3, 0]);
      // A status changed after the order's commit, and one changed in the transaction that wrote
      // it (as an execute turns its order rejected): each is counted where it ends.
      const reject = (ref: string, q: Db | Tx) =>
        sql`UPDATE orders SET status = 'rejected' WHERE partner_id = ${partnerId} AND partner_order_ref = ${ref}`.execute(
          q,
        );
      await reject("c-1", db);
      await db.transaction().execute(async (tx) => {
        await write(two, 1, "card", "completed", "d", tx);
        await reject("d-1", tx);
      });
      await expect([10, 5, 6, 4, 7, 3, 2]);
    });
  });
});

describe("migration 0026: the counts by day", () => {
  test("orders written before it are rolled up by the first roll-up, and the totals hold throughout", async () => {
    await beforeMigration("0026", async ({ database, partnerId, clients: [one, two], write }) => {
      const db = database.db;
      await write(one, 3, "bank", "completed", "a");
      await write(two, 2, "card", "rejected", "b");
      // Moved to two past days, as orders written on them would be.
      await sql`UPDATE orders SET created_at = '2026-02-10T08:00:00Z' WHERE partner_order_ref IN ('a-1', 'b-1')`.execute(
        db,
      );
      await sql`UPDATE orders SET created_at = '2026-02-11T23:59:59.999999Z' WHERE partner_order_ref = 'a-2'`.execute(
        db,
      );
      assert.ok((await migrate(database)).includes("0026_order_day_counts"));
      const list = (filter: Partial<OrderFilter>) =>
        listOrders(db, partnerId, { ...noFilter, ...filter }, 1, 10).then((r) => r.total);
      const expect = async (want: number[]) =>
        assert.deepEqual(
          [
            await list({ from: "2026-02-10T00:00:00Z", to: "2026-02-11T23:59:59.999999Z" }),
            await list({ from: "2026-02-11T00:00:00Z" }),
            await list({ to: "2026-02-10T23:59:59Z", statuses: ["rejected"] }),
            await list({ from: "2026-02-01T00:00:00Z", to: "2026-02-28T00:00:00Z", sources: ["bank"] }),
          ],
          want,
        );
      await expect([3, 3, 1, 2]);
      const roll = await new OrdersService(db, systemClock).rollDays({ budgetMs: 60_000 });
      assert.deepEqual([roll.days, roll.done], [2, true]);
      await expect([3, 3, 1, 2]);
      // The rows are read: one moved shows in a total that keeps its whole day.
      await sql`UPDATE order_day_counts SET orders = orders + 10 WHERE partner_id = ${partnerId} AND day = '2026-02-10'`.execute(
        db,
      );
      assert.equal(await list({ from: "2026-02-10T00:00:00Z", to: "2026-02-11T23:59:59.999999Z" }), 3 + 20);
    });
  });
});

describe("migration 0028: the partner's counts per house slot", () => {
  test("start from the orders already there, follow new orders and a change of status, and stay at most 64 rows a kind", async () => {
    await beforeMigration("0028", async ({ database, partnerId, clients: [one], write }) => {
      const db = database.db;
      // More clients than slots, so that slots are shared.
      const many = [one];
      for (let n = 4; n <= 133; n++) many.push((await insertClient(db, partnerId, n)).id);
      for (const [i, client] of many.entries())
        await write(
          client,
          1 + (i % 3),
          i % 2 === 0 ? "bank" : "card",
          i % 5 === 0 ? "rejected" : "completed",
          `m${i}`,
        );
      assert.ok((await migrate(database)).includes("0028_order_slot_counts"));
      /** The slot rows against the table, and every partner-wide total against the table. */
      const agree = async () => {
        const { rows: table } = await sql<{ status: string; source: string; slot: number; n: string }>`
          SELECT status, source, (client_id % 64)::int AS slot, count(*)::text AS n FROM orders
           WHERE partner_id = ${partnerId} GROUP BY 1, 2, 3 ORDER BY 1, 2, 3`.execute(db);
        const { rows: kept } = await sql<{ status: string; source: string; slot: number; n: string }>`
          SELECT status, source, slot::int AS slot, orders::text AS n FROM order_slot_counts
           WHERE partner_id = ${partnerId} AND orders > 0 ORDER BY 1, 2, 3`.execute(db);
        assert.deepEqual(kept, table);
        for (const s of ["completed", "rejected"] as const)
          assert.ok(kept.filter((k) => k.status === s).length <= 2 * 64);
        const list = (filter: Partial<OrderFilter>) =>
          listOrders(db, partnerId, { ...noFilter, ...filter }, 1, 10).then((r) => r.total);
        const count = (f: (r: (typeof table)[number]) => boolean) =>
          table.filter(f).reduce((a, r) => a + Number(r.n), 0);
        assert.equal(
          await list({}),
          count(() => true),
        );
        assert.equal(
          await list({ statuses: ["rejected"] }),
          count((r) => r.status === "rejected"),
        );
        assert.equal(
          await list({ sources: ["card"] }),
          count((r) => r.source === "card"),
        );
        assert.equal(
          await list({ sources: ["bank"], statuses: ["completed", "rejected"] }),
          count((r) => r.source === "bank"),
        );
        return count(() => true);
      };
      const atFirst = await agree();
      assert.ok(atFirst > 200, `${atFirst} orders`);
      // Counted from then on, by the trigger, in one transaction with a change of status.
      await db.transaction().execute(async (tx) => {
        await write(many[70]!, 2, "card", "completed", "after", tx);
        await sql`UPDATE orders SET status = 'rejected' WHERE partner_id = ${partnerId} AND partner_order_ref = 'after-1'`.execute(
          tx,
        );
      });
      await sql`UPDATE orders SET source = 'bank' WHERE partner_id = ${partnerId} AND partner_order_ref = 'm1-1'`.execute(
        db,
      );
      assert.equal(await agree(), atFirst + 2);
    });
  });
});
