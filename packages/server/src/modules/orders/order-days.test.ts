// The orders' days rolled up (migration 0026, OrdersService.rollDays, order-days-store.ts; docs/decisions.md, "An orders page's
// total from kept counts"): a page's total under a range of dates is the number of orders the range
// holds, before the days are rolled up and after, under every filter and for ranges that start or
// end anywhere in a day, at midnight, a microsecond either side of it, or at another offset. Orders
// written into a day already rolled, and orders whose status or time change there, move the day's
// rows; a roll-up rolls nothing twice; and on PostgreSQL, orders written by several connections
// while the days are being rolled are each counted once.
//
// ORDER_DAYS_SEED replays a run.

import assert from "node:assert/strict";
import crypto from "node:crypto";
import { after, before, describe, test } from "node:test";
import { sql } from "kysely";
import pg from "pg";
import { type DatabaseHandle, type Db, openDatabase } from "../../db/database.ts";
import type { OrderSource, OrderStatus } from "../../db/schema.ts";
import { systemClock } from "../../platform/clock.ts";
import { seededRandom } from "../../platform/random.ts";
import { insertClient } from "../../testing/fixtures.ts";
import { onPostgres, openTestDatabase, testDatabaseUrl } from "../../testing/harness.ts";
import { rollableUntil, transactionsBegun } from "./order-days-store.ts";
import { OrdersService, type RollOptions } from "./orders-service.ts";
import { listOrders, type OrderFilter } from "./orders-store.ts";

const seed = Number(process.env.ORDER_DAYS_SEED ?? crypto.randomInt(2 ** 31));
const random = seededRandom(seed);
const pick = <T>(xs: readonly T[]): T => xs[Math.floor(random() * xs.length)] as T;

const sources: OrderSource[] = ["bank", "card", "market"];
const statuses: OrderStatus[] = ["completed", "rejected", "failed"];
const dayMs = 86_400_000;
/** The orders' days: 12 days from 1 March 2026, some of them without orders. */
const firstDayMs = Date.UTC(2026, 2, 1);
const days = 12;

/** An instant as RFC 3339 text to the microsecond, in UTC or at +05:30. */
function instant(micros: bigint, offset: "Z" | "+05:30" = "Z"): string {
  const shifted = offset === "Z" ? micros : micros + 19_800_000_000n;
  const ms = Number(shifted / 1000n);
  const us = String(shifted % 1000n).padStart(3, "0");
  return `${new Date(ms).toISOString().slice(0, 23)}${us}${offset}`;
}
const micro = (ms: number) => BigInt(ms) * 1000n;

/** Orders of `partnerId`'s clients at the given instants, written as the service's triggers see them. */
async function writeOrders(q: Db, partnerId: string, clients: number[], at: readonly bigint[], tag: string) {
  for (const [i, t] of at.entries()) {
    await sql`INSERT INTO orders (partner_id, client_id, partner_order_ref, type, source, status, debit,
                debit_asset_id, fee_asset_id, created_at)
              VALUES (${partnerId}, ${pick(clients)}, ${`${tag}-${i}`}, 'deposit', ${pick(sources)},
                ${pick(statuses)}, 1, 'AED', 'AED', ${instant(t)}::timestamptz)`.execute(q);
  }
}

/** Housekeeping's roll-up, on the system's clock. */
const rollDays = (db: Db, options: RollOptions) => new OrdersService(db, systemClock).rollDays(options);

/** The orders of the partner under a filter, counted: what every total must be. */
async function truth(db: Db, partnerId: string, f: OrderFilter): Promise<number> {
  let q = db.selectFrom("orders").where("partner_id", "=", partnerId);
  if (f.sources.length > 0) q = q.where("source", "in", f.sources);
  if (f.statuses.length > 0) q = q.where("status", "in", f.statuses);
  if (f.from !== null) q = q.where("created_at", ">=", f.from);
  if (f.to !== null) q = q.where("created_at", "<=", f.to);
  const row = await q.select((eb) => eb.fn.countAll<string>().as("n")).executeTakeFirstOrThrow();
  return Number(row.n);
}

/** The rolled days' rows, and the same counted from the orders: they must be equal. */
async function dayRowsAgainstOrders(db: Db): Promise<{ kept: string[]; counted: string[] }> {
  const kept = await sql<{ r: string }>`
    SELECT d.partner_id || ' ' || d.day || ' ' || d.status || ' ' || d.source || ' ' || d.orders AS r
      FROM order_day_counts d WHERE d.orders > 0 ORDER BY 1`.execute(db);
  const counted = await sql<{ r: string }>`
    SELECT o.partner_id || ' ' || (o.created_at AT TIME ZONE 'UTC')::date || ' ' || o.status || ' ' || o.source
           || ' ' || count(*) AS r
      FROM orders o JOIN order_days_rolled r ON r.partner_id = o.partner_id
     WHERE (o.created_at AT TIME ZONE 'UTC')::date < r.until
     GROUP BY o.partner_id, (o.created_at AT TIME ZONE 'UTC')::date, o.status, o.source ORDER BY 1`.execute(
    db,
  );
  return { kept: kept.rows.map((r) => r.r), counted: counted.rows.map((r) => r.r) };
}

describe(`orders: totals by rolled-up days (ORDER_DAYS_SEED=${seed})`, () => {
  let database: DatabaseHandle;
  let db: Db;
  let partnerId: string;
  let otherId: string;
  let clients: number[];

  before(async () => {
    database = await openTestDatabase();
    db = database.db;
    partnerId = crypto.randomUUID();
    otherId = crypto.randomUUID();
    await sql`INSERT INTO partners (id, name) VALUES (${partnerId}, 'Days'), (${otherId}, 'Other')`.execute(
      db,
    );
    clients = [
      (await insertClient(db, partnerId, 1)).id,
      (await insertClient(db, partnerId, 2)).id,
      (await insertClient(db, partnerId, 3)).id,
    ];
    const otherClient = (await insertClient(db, otherId, 1)).id;
    // Each day 0 to 9 orders at random instants; and on day 3, orders at its first and last
    // microsecond, and at the next day's first.
    const at: bigint[] = [];
    for (let d = 0; d < days; d++) {
      const n = Math.floor(random() * 10);
      for (let i = 0; i < n; i++)
        at.push(micro(firstDayMs + d * dayMs) + BigInt(Math.floor(random() * dayMs * 1000)));
    }
    const day3 = micro(firstDayMs + 3 * dayMs);
    at.push(day3, day3 + micro(dayMs) - 1n, day3 + micro(dayMs));
    await writeOrders(db, partnerId, clients, at, "seed");
    // The other partner's orders on the same days, which no total of the first may count.
    await writeOrders(db, otherId, [otherClient], at.slice(0, 20), "other");
    // And one of today, which no roll-up takes: its day is not over.
    await sql`INSERT INTO orders (partner_id, client_id, partner_order_ref, type, source, status, debit,
                debit_asset_id, fee_asset_id)
              VALUES (${partnerId}, ${clients[0]}, 'today', 'deposit', 'bank', 'completed', 1, 'AED', 'AED')`.execute(
      db,
    );
  });
  after(async () => {
    await database.close();
  });

  /** Ranges of every kind: an end at a day's midnight, a microsecond either side, anywhere, at +05:30. */
  function ranges(): { from: string | null; to: string | null }[] {
    const anywhere = () =>
      micro(firstDayMs - dayMs) + BigInt(Math.floor(random() * (days + 2) * dayMs * 1000));
    const midnight = () => micro(firstDayMs + Math.floor(random() * (days + 1)) * dayMs);
    const end = (): string => {
      const kind = Math.floor(random() * 5);
      const t = kind === 0 ? anywhere() : midnight() + [0n, -1n, 1n, 0n][kind - 1]!;
      return instant(t, kind === 4 ? "+05:30" : "Z");
    };
    const out: { from: string | null; to: string | null }[] = [
      { from: instant(micro(firstDayMs)), to: null },
      { from: null, to: instant(micro(firstDayMs + 5 * dayMs) - 1n) },
      { from: instant(micro(firstDayMs + 3 * dayMs)), to: instant(micro(firstDayMs + 4 * dayMs)) },
      { from: instant(micro(firstDayMs + 3 * dayMs) + 1n), to: instant(micro(firstDayMs + 4 * dayMs) - 1n) },
      { from: instant(micro(firstDayMs + 2 * dayMs)), to: instant(micro(firstDayMs + 9 * dayMs) - 1n) },
      // A range of the days rolled and today's, and one that ends before it starts.
      { from: instant(micro(firstDayMs + 6 * dayMs)), to: "9999-12-31T23:59:59Z" },
      { from: instant(micro(firstDayMs + 9 * dayMs)), to: instant(micro(firstDayMs + 2 * dayMs)) },
    ];
    for (let i = 0; i < 40; i++) {
      const shape = Math.floor(random() * 3);
      out.push({ from: shape === 1 ? null : end(), to: shape === 2 ? null : end() });
    }
    return out;
  }
  const filters: Pick<OrderFilter, "sources" | "statuses">[] = [
    { sources: [], statuses: [] },
    { sources: ["bank"], statuses: [] },
    { sources: [], statuses: ["completed", "rejected"] },
    { sources: ["card", "market"], statuses: ["failed"] },
  ];

  /** Every range under every filter totals what the table holds. */
  async function assertEveryTotal(label: string) {
    for (const range of ranges())
      for (const kinds of filters) {
        const filter: OrderFilter = { clientId: null, ...kinds, ...range };
        const { total } = await listOrders(db, partnerId, filter, 1, 5);
        assert.equal(total, await truth(db, partnerId, filter), `${label}: ${JSON.stringify(filter)}`);
      }
  }

  test("a range's total is the orders it holds, before the days are rolled up and after; the rows are the orders' days", async () => {
    await assertEveryTotal("before the roll-up");
    const distinctDays = await sql<{ n: string }>`
      SELECT count(DISTINCT (partner_id, (created_at AT TIME ZONE 'UTC')::date)) AS n FROM orders
       WHERE created_at < date_trunc('day', now() AT TIME ZONE 'UTC') AT TIME ZONE 'UTC'`.execute(db);
    const result = await rollDays(db, { budgetMs: 60_000 });
    assert.equal(result.done, true);
    assert.equal(result.days, Number(distinctDays.rows[0]?.n));
    assert.equal(result.until, (await rollableUntil(db)).until);
    const rolled = await db.selectFrom("order_days_rolled").select(["partner_id", "until"]).execute();
    assert.deepEqual(
      rolled.filter((r) => r.partner_id === partnerId || r.partner_id === otherId).map((r) => r.until),
      [result.until, result.until],
    );
    const { kept, counted } = await dayRowsAgainstOrders(db);
    assert.ok(kept.length > 10);
    assert.deepEqual(kept, counted);
    await assertEveryTotal("after the roll-up");
    // A second run has nothing to roll, and changes nothing.
    const again = await rollDays(db, { budgetMs: 60_000 });
    assert.deepEqual([again.days, again.done], [0, true]);
    assert.deepEqual(await dayRowsAgainstOrders(db), { kept, counted });
  });

  test("a total reads the rows of the whole days its range keeps, and counts the rest", async () => {
    // Only a changed row shows which totals read it; it is put back at once.
    const day = new Date(firstDayMs + 3 * dayMs).toISOString().slice(0, 10);
    const shift = (by: number) =>
      sql`UPDATE order_day_counts SET orders = orders + ${by}
           WHERE partner_id = ${partnerId} AND day = ${day}::date`.execute(db);
    const d3 = micro(firstDayMs + 3 * dayMs);
    const cases = {
      // The whole day 3, exactly, and with the days around it.
      exactly: { from: instant(d3), to: instant(d3 + micro(dayMs) - 1n) },
      around: { from: instant(d3 - micro(dayMs) + 7n), to: instant(d3 + micro(2 * dayMs) + 7n) },
      atOffset: { from: instant(d3, "+05:30"), to: null },
      // Day 3 less its first or last microsecond: counted.
      lateStart: { from: instant(d3 + 1n), to: instant(d3 + micro(dayMs) - 1n) },
      earlyEnd: { from: instant(d3), to: instant(d3 + micro(dayMs) - 2n) },
    };
    const totals = async () => {
      const out: Record<string, number> = {};
      for (const [name, range] of Object.entries(cases))
        out[name] = (
          await listOrders(db, partnerId, { clientId: null, sources: [], statuses: [], ...range }, 1, 5)
        ).total;
      return out;
    };
    const before = await totals();
    const rows = await db
      .selectFrom("order_day_counts")
      .where("partner_id", "=", partnerId)
      .where("day", "=", day)
      .select("orders")
      .execute();
    assert.ok(rows.length > 0, "day 3 has orders, rolled up");
    await shift(100);
    try {
      const read = await totals();
      const moved = ["exactly", "around", "atOffset"];
      for (const [name, value] of Object.entries(read))
        assert.equal(value, (before[name] ?? 0) + (moved.includes(name) ? 100 * rows.length : 0), name);
    } finally {
      await shift(-100);
    }
    assert.deepEqual(await totals(), before);
  });

  test("orders written into days rolled up, and orders whose status or time change, move the days' rows", async () => {
    const d5 = micro(firstDayMs + 5 * dayMs);
    // Written into days rolled, one of them a day that had no order.
    await writeOrders(
      db,
      partnerId,
      clients,
      [d5 + 5n, d5 + micro(dayMs) - 1n, micro(firstDayMs + 11 * dayMs)],
      "late",
    );
    const someOrder = async (tag: string) =>
      (
        await db
          .selectFrom("orders")
          .where("partner_id", "=", partnerId)
          .where("partner_order_ref", "=", tag)
          .select("id")
          .executeTakeFirstOrThrow()
      ).id;
    const late0 = await someOrder("late-0");
    // A status changed; a time moved to another day rolled, then to today (not rolled), then back.
    await sql`UPDATE orders SET status = CASE status WHEN 'failed' THEN 'completed' ELSE 'failed' END
               WHERE id = ${late0}`.execute(db);
    const seed1 = await someOrder("seed-1");
    await sql`UPDATE orders SET created_at = created_at - interval '2 days' WHERE id = ${seed1}`.execute(db);
    const seed2 = await someOrder("seed-2");
    await sql`UPDATE orders SET created_at = now() WHERE id = ${seed2}`.execute(db);
    const seed3 = await someOrder("seed-3");
    await sql`UPDATE orders SET created_at = now() WHERE id = ${seed3}`.execute(db);
    await sql`UPDATE orders SET created_at = ${instant(d5 + 9n)}::timestamptz WHERE id = ${seed3}`.execute(
      db,
    );
    // Written and changed in one transaction, as an execute turns its order rejected.
    await db.transaction().execute(async (tx) => {
      await writeOrders(tx as unknown as Db, partnerId, clients, [d5 + 77n], "both");
      await sql`UPDATE orders SET status = 'rejected', source = 'card'
                 WHERE partner_id = ${partnerId} AND partner_order_ref = 'both-0'`.execute(tx);
    });
    const { kept, counted } = await dayRowsAgainstOrders(db);
    assert.deepEqual(kept, counted);
    await assertEveryTotal("after writes into rolled days");
  });

  test("the roll-up's bound is today, or the day the oldest transaction still running began", async () => {
    const today = await sql<{ d: string }>`SELECT (now() AT TIME ZONE 'UTC')::date AS d`.execute(db);
    assert.deepEqual(await rollableUntil(db), { until: today.rows[0]?.d, unseen: 0 });
    if (!onPostgres) {
      // One session: no other transaction to wait for, none unseen.
      const seen = await transactionsBegun(db);
      assert.equal(seen.oldest, null);
      assert.equal(seen.unseen, 0);
      return;
    }
    // A transaction of another session, begun: the bound is no later than its day, and its start
    // is seen (a session the query missed would let a roll-up take a day it is writing into).
    await db.transaction().execute(async (tx) => {
      const began = await sql<{ t: string }>`SELECT now()::text AS t`.execute(tx);
      const seen = await transactionsBegun(db);
      assert.ok(seen.oldest !== null, "the other session's transaction is seen");
      const ok = await sql<{ ok: boolean }>`
        SELECT ${seen.oldest}::timestamptz <= ${began.rows[0]?.t}::timestamptz AS ok`.execute(db);
      assert.equal(ok.rows[0]?.ok, true, `${seen.oldest} is no later than ${began.rows[0]?.t}`);
    });
    // A transaction in another database of the cluster cannot write this one's orders: it holds
    // nothing back (a backup of another database is one transaction for hours). Other test files'
    // transactions here (they share this database, each in its schema) last at most a second or
    // two, the other database's for the whole look: of looks 50 ms apart, up to 100 of them (the
    // first that sees none older ends them), one at least sees none older than it.
    const elsewhere = new URL(testDatabaseUrl as string);
    elsewhere.pathname = "/postgres";
    const other = new pg.Client({ connectionString: elsewhere.toString() });
    await other.connect();
    try {
      await other.query("BEGIN");
      const began = (await other.query<{ t: string }>("SELECT now()::text AS t")).rows[0]?.t as string;
      await new Promise((resolve) => setTimeout(resolve, 100));
      const looks: (string | null)[] = [];
      for (let i = 0; i < 100 && !looks.includes(null); i++) {
        const { oldest } = await transactionsBegun(db);
        const older =
          oldest !== null &&
          (
            await sql<{
              older: boolean;
            }>`SELECT ${oldest}::timestamptz <= ${began}::timestamptz AS older`.execute(db)
          ).rows[0]?.older === true;
        looks.push(older ? oldest : null);
        if (older) await new Promise((resolve) => setTimeout(resolve, 50));
      }
      assert.ok(
        looks.includes(null),
        `another database's transaction (${began}) was taken for this one's, ${looks.length} times: ${looks.slice(0, 5)}`,
      );
    } finally {
      await other.end().catch(() => {});
    }
  });
});

describe("orders: no day rolled while sessions the service's role cannot see are connected (PostgreSQL)", {
  skip: !onPostgres,
}, () => {
  // pg_stat_activity shows a session of another role with no transaction start unless the role
  // reading it has that role's privileges or pg_read_all_stats. Such a session may be writing an
  // order of the day the roll-up is about to count (migration 0026): while one is connected, the
  // roll-up must not roll any day.
  test("a session of another role holds every day back; pg_read_all_stats lets the roll-up see it", async () => {
    const url = testDatabaseUrl as string;
    const tag = crypto.randomBytes(4).toString("hex");
    const [service, other] = [`cp_roll_service_${tag}`, `cp_roll_other_${tag}`];
    const admin = new pg.Client({ connectionString: url });
    await admin.connect();
    const as = (role: string) => {
      const u = new URL(url);
      u.username = role;
      u.password = "";
      return u.toString();
    };
    let handle: DatabaseHandle | null = null;
    const otherSession = new pg.Client({ connectionString: as(other) });
    try {
      await admin.query(`CREATE ROLE ${service} LOGIN; CREATE ROLE ${other} LOGIN`);
      handle = await openDatabase({ databaseUrl: as(service), pgliteDir: null, poolSize: 1 });
      const today = await sql<{ d: string }>`SELECT (now() AT TIME ZONE 'UTC')::date::text AS d`.execute(
        handle.db,
      );
      // The other role's session, in a transaction.
      await otherSession.connect();
      await otherSession.query("BEGIN");
      await otherSession.query("SELECT 1");
      const blind = await rollableUntil(handle.db);
      assert.equal(blind.until, null, "no day may be rolled");
      assert.ok(blind.unseen >= 1, `the other role's session is counted (${blind.unseen})`);
      const run = await new OrdersService(handle.db, systemClock).rollDays({ budgetMs: 60_000 });
      assert.deepEqual(
        { ...run, unseen: run.unseen >= 1 },
        { days: 0, done: false, until: null, unseen: true },
      );
      // Granted pg_read_all_stats, the service's role sees every session: the bound is the
      // oldest transaction's day again (at most today).
      await admin.query(`GRANT pg_read_all_stats TO ${service}`);
      const seeing = await rollableUntil(handle.db);
      assert.equal(seeing.unseen, 0);
      assert.ok(seeing.until !== null && seeing.until <= (today.rows[0]?.d as string), `${seeing.until}`);
      const seen = await transactionsBegun(handle.db);
      assert.ok(seen.oldest !== null, "the other session's transaction start is seen");
    } finally {
      await otherSession.end().catch(() => {});
      await handle?.close();
      await admin.query(`DROP ROLE IF EXISTS ${service}; DROP ROLE IF EXISTS ${other}`);
      await admin.end();
    }
  });
});

describe("orders: a partner whose roll-up fails", () => {
  test("holds the others back in nothing, and its own days stay as they were", async () => {
    const database = await openTestDatabase();
    const db = database.db;
    try {
      // Two partners, the failing one first in the roll-up's order (by id).
      const [failing, fine] = [
        "00000000-0000-4000-8000-000000000001",
        "00000000-0000-4000-8000-000000000002",
      ];
      await sql`INSERT INTO partners (id, name) VALUES (${failing}, 'Failing'), (${fine}, 'Fine')`.execute(
        db,
      );
      const at = [micro(Date.UTC(2026, 2, 1, 10))];
      await writeOrders(db, failing, [(await insertClient(db, failing, 1)).id], at, "f");
      await writeOrders(db, fine, [(await insertClient(db, fine, 1)).id], at, "g");
      // A row of a day not rolled yet: a broken count, which the roll-up refuses to add to.
      await sql`INSERT INTO order_day_counts (partner_id, day, status, source, orders)
                SELECT partner_id, '2026-03-01', status, source, 5 FROM orders WHERE partner_id = ${failing}`.execute(
        db,
      );
      await assert.rejects(rollDays(db, { budgetMs: 60_000 }), /order_day_counts_pkey|duplicate key/);
      const rolled = await db.selectFrom("order_days_rolled").select(["partner_id", "until"]).execute();
      assert.deepEqual(
        rolled.map((r) => r.partner_id),
        [fine],
      );
      const rows = await db
        .selectFrom("order_day_counts")
        .select(["partner_id", "orders"])
        .orderBy("partner_id")
        .execute();
      assert.deepEqual(
        rows.map((r) => [r.partner_id, r.orders]),
        [
          [failing, 5],
          [fine, 1],
        ],
      );
    } finally {
      await database.close();
    }
  });
});

describe("orders: days rolled up while several connections write into them (PostgreSQL)", {
  skip: !onPostgres,
}, () => {
  test("an order whose commit the roll-up overtakes is counted: the roll-up waits for it", async () => {
    // The one interleaving the partner's lock is for, made to happen: an order of a past day
    // reads, at its commit, that its day is not rolled (so it does not add itself to the day's
    // row), and has not committed yet when the roll-up counts that day. A trigger of this test
    // (fired after count_order, whose trigger's name comes first) holds such an order's commit
    // for 1.5 s. With the lock, the roll-up waits for that commit and counts the order; without
    // it, the day's row misses the order, every time.
    const database = await openTestDatabase();
    const db = database.db;
    const writer = new pg.Client({ connectionString: testDatabaseUrl as string });
    try {
      const schema = (await sql<{ s: string }>`SELECT current_schema() AS s`.execute(db)).rows[0]
        ?.s as string;
      await sql`CREATE FUNCTION slow_commit() RETURNS trigger LANGUAGE plpgsql AS $$
                BEGIN PERFORM pg_sleep(1.5); RETURN NULL; END $$`.execute(db);
      await sql`CREATE CONSTRAINT TRIGGER zz_slow_commit AFTER INSERT ON orders
                DEFERRABLE INITIALLY DEFERRED FOR EACH ROW
                WHEN (NEW.partner_order_ref LIKE 'slow-%') EXECUTE FUNCTION slow_commit()`.execute(db);
      const partnerId = crypto.randomUUID();
      await sql`INSERT INTO partners (id, name) VALUES (${partnerId}, 'Overtaken')`.execute(db);
      const clients = [(await insertClient(db, partnerId, 1)).id];
      const day = Date.UTC(2026, 1, 10);
      await writeOrders(db, partnerId, clients, [micro(day + 3_600_000)], "before");
      await writer.connect();
      await writer.query(`SET search_path = ${schema}`);
      const pid = (await writer.query<{ pid: number }>("SELECT pg_backend_pid() AS pid")).rows[0]?.pid;
      const slow = writer.query(
        `INSERT INTO orders (partner_id, client_id, partner_order_ref, type, source, status, debit,
           debit_asset_id, fee_asset_id, created_at)
         VALUES ($1, $2, 'slow-1', 'deposit', 'bank', 'completed', 1, 'AED', 'AED', $3::timestamptz)`,
        [partnerId, clients[0], instant(micro(day + 7_200_000))],
      );
      // The order's commit is in the test's trigger, past count_order: the roll-up now. (Seen
      // committed before it was seen waiting, the order would prove nothing: the test fails.)
      let committed = false;
      slow.then(
        () => (committed = true),
        () => (committed = true),
      );
      for (;;) {
        const { rows } = await sql<{ n: number }>`
          SELECT count(*)::int AS n FROM pg_stat_activity WHERE pid = ${pid} AND wait_event = 'PgSleep'`.execute(
          db,
        );
        if (rows[0]?.n === 1) break;
        assert.equal(committed, false, "the slow order's commit was never seen waiting");
        await new Promise((resolve) => setTimeout(resolve, 2));
      }
      const upTo = new Date(day + dayMs).toISOString().slice(0, 10);
      const run = await rollDays(db, { budgetMs: 60_000, upTo });
      assert.equal(run.days, 1);
      await slow;
      const { kept, counted } = await dayRowsAgainstOrders(db);
      const mine = (rows: string[]) => rows.filter((r) => r.startsWith(partnerId));
      assert.equal(
        mine(counted).reduce((n, r) => n + Number(r.split(" ").at(-1)), 0),
        2,
      );
      assert.deepEqual(mine(kept), mine(counted));
    } finally {
      await writer.end().catch(() => {});
      await database.close();
    }
  });

  test("each order is counted once, whether written before, during or after its day's roll-up", async () => {
    const database = await openTestDatabase();
    const db = database.db;
    try {
      const partnerId = crypto.randomUUID();
      await sql`INSERT INTO partners (id, name) VALUES (${partnerId}, 'Racing')`.execute(db);
      const clients = [(await insertClient(db, partnerId, 1)).id, (await insertClient(db, partnerId, 2)).id];
      // 30 past days; four writers, 120 orders each, one per transaction, on days at random.
      const start = Date.UTC(2026, 1, 1);
      const writer = async (w: number) => {
        for (let i = 0; i < 120; i++) {
          const t = micro(start) + BigInt(Math.floor(random() * 30 * dayMs * 1000));
          await writeOrders(db, partnerId, clients, [t], `w${w}-${i}`);
        }
      };
      // The roll-up moves a day further at a time while the writers write, so that days are rolled
      // under them, then rolls the rest.
      let writing = true;
      const roller = (async () => {
        let steps = 0;
        for (let k = 1; k <= 30 && writing; k++) {
          const upTo = new Date(start + k * dayMs).toISOString().slice(0, 10);
          await rollDays(db, { budgetMs: 60_000, upTo });
          steps += 1;
          await new Promise((resolve) => setTimeout(resolve, 10));
        }
        await rollDays(db, { budgetMs: 60_000 });
        return steps;
      })();
      await writeOrders(db, partnerId, clients, [micro(start + 3 * dayMs)], "first");
      await Promise.all([0, 1, 2, 3].map(writer));
      writing = false;
      const steps = await roller;
      assert.ok(steps >= 5, `the days were rolled in ${steps} steps while the writers wrote`);
      const { kept, counted } = await dayRowsAgainstOrders(db);
      const mine = (rows: string[]) => rows.filter((r) => r.startsWith(partnerId));
      assert.equal(
        mine(counted).reduce((n, r) => n + Number(r.split(" ").at(-1)), 0),
        481,
        "every order of the 30 days is in a day rolled",
      );
      assert.deepEqual(mine(kept), mine(counted));
    } finally {
      await database.close();
    }
  });
});
