// Evidence for docs/operations.md ("Orders list with a million orders"): fills a fresh PostgreSQL
// database with orders of one partner (1,000 clients, all sources and statuses, one order every
// 25 s), first 10,000 then 1,000,000, beside a small partner's 1,000, and at each size times the
// statement the service runs for a page of GET /v1/partner/orders (listOrders, its total included)
// under each kind of filter, printing p50 and p95 and how many runs were on the plan PostgreSQL
// made once; at 1,000,000 it also prints the plans of the totals.
// Usage: node scripts/orders-query-plan.ts [DATABASE_URL] [--runs N] [--clients N] [--keep | --reuse NAME]
//   --clients N    the large partner's clients (default 1,000; at least 500), its orders spread evenly
//   --keep         leaves the database seeded at 1,000,000 orders, and prints its name (drop it by hand)
//   --reuse NAME   times the pages and prints the plans on such a database, seeding nothing (a change
//                  to the statement measured in a minute; the ratios need a full run)

import crypto from "node:crypto";
import { sql } from "kysely";
import pg from "pg";
import { openDatabase } from "../packages/server/src/db/database.ts";
import { migrate } from "../packages/server/src/db/migrate.ts";
import { englishCountryName, seedCatalog } from "../packages/server/src/modules/catalog/index.ts";
import { OrdersService } from "../packages/server/src/modules/orders/orders-service.ts";
import { listOrders, type OrderFilter } from "../packages/server/src/modules/orders/orders-store.ts";
import { systemClock } from "../packages/server/src/platform/clock.ts";

const args = process.argv.slice(2);
const runsAt = args.indexOf("--runs");
const runs = runsAt === -1 ? 60 : Number(args[runsAt + 1]);
const clientsAt = args.indexOf("--clients");
const clientCount = clientsAt === -1 ? 1000 : Number(args[clientsAt + 1]);
if (!Number.isInteger(clientCount) || clientCount < 500 || clientCount > 1_000_000)
  throw new Error(`--clients takes a whole number from 500 to 1,000,000`);
const reuseAt = args.indexOf("--reuse");
const reuse = reuseAt === -1 ? null : (args[reuseAt + 1] ?? "");
if (reuse !== null && !/^cp_plan_[0-9]+$/.test(reuse))
  throw new Error(`--reuse takes a cp_plan_… name: ${reuse}`);
const keep = args.includes("--keep") || reuse !== null;
/** Where the values of --runs, --clients and --reuse stand (none when the option is not given). */
const valueAt = new Set([runsAt, clientsAt, reuseAt].filter((i) => i !== -1).map((i) => i + 1));
const positional = args.filter((a, i) => !a.startsWith("--") && !valueAt.has(i));
const baseUrl = positional[0] ?? process.env.DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/postgres";
const dbName = reuse ?? `cp_plan_${Date.now()}`;
const admin = new pg.Client({ connectionString: baseUrl });
await admin.connect();
if (reuse === null) await admin.query(`CREATE DATABASE ${dbName}`);
const url = new URL(baseUrl);
url.pathname = `/${dbName}`;
const db = new pg.Client({ connectionString: url.toString() });
const handle = await openDatabase({ databaseUrl: url.toString(), pgliteDir: null, poolSize: 2 });
const out = (line = "") => process.stdout.write(`${line}\n`);
try {
  await db.connect();
  // As the service's connections (docs/decisions.md, "No JIT on the service's connections").
  await db.query("SET jit = off");
  if (reuse === null) {
    await migrate(handle);
    await seedCatalog(handle.db, englishCountryName);
  }
  /** The partner named `name`: made, with its clients `prefix`-1 to `prefix`-`clients`, unless reused. */
  async function partnerNamed(
    name: string,
    prefix: string,
    clients: number,
    phones: string,
  ): Promise<string> {
    if (reuse !== null) return (await db.query(`SELECT id FROM partners WHERE name = $1`, [name])).rows[0].id;
    const id = crypto.randomUUID();
    await db.query(`INSERT INTO partners (id, name) VALUES ($1, $2)`, [id, name]);
    await db.query(
      `INSERT INTO clients (partner_id, partner_client_id, account_type, name, birth_date, status, email, phone,
       residency_id, citizenship_id, place_of_birth_id, government_id_number, government_id_doe, address,
       employment, trading_volume, account_purpose)
     SELECT $1, $2 || '-' || i, 'personal', 'n', '1990-01-01', 'verified', $2 || i || '@x.test',
       $3 || lpad(i::text, 8, '0'), 'ae', 'ae', 'ae', $2 || '-g-' || i, '2030-01-01', '{}', '{"status":"retired"}',
       'x', '{long_term_investment}'
     FROM generate_series(1, $4::int) i`,
      [id, prefix, phones, clients],
    );
    return id;
  }
  const partner = await partnerNamed("plan", "c", clientCount, "+9715");
  // A second partner, small: 10 clients of 100 orders each, in March. PostgreSQL weighs a plan made
  // for a run's values by what that partner has; beside a partner of a million orders, its pages
  // were planned anew at each run (docs/decisions.md, "A page planned once for any partner").
  const small = await partnerNamed("plan-small", "s", 10, "+9716");
  if (reuse === null) {
    await db.query(
      `INSERT INTO orders (partner_id, client_id, partner_order_ref, type, source, status, debit, debit_asset_id,
         fee_asset_id, created_at, transitioned_at, updated_at)
       SELECT c.partner_id, c.id, 's-' || c.id || '-' || k, 'deposit', 'bank',
         (ARRAY['completed','completed','completed','rejected','failed'])[1 + k % 5], 1, 'AED', 'AED', t, t, t
       FROM clients c, generate_series(1, 100) k,
         LATERAL (SELECT timestamptz '2026-03-01' + (k * 10 + c.id % 10) * interval '1 minute' AS t) x
       WHERE c.partner_id = $1`,
      [small],
    );
  }
  const client500 = Number(
    (
      await db.query(`SELECT id FROM clients WHERE partner_id = $1 AND partner_client_id = 'c-500'`, [
        partner,
      ])
    ).rows[0].id,
  );
  const smallClient = Number(
    (await db.query(`SELECT id FROM clients WHERE partner_id = $1 AND partner_client_id = 's-5'`, [small]))
      .rows[0].id,
  );

  /**
   * Orders from..to (1-based), 10,000 a statement, as many as the service's triggers see. In one
   * transaction, each update of a count row walks past every version of it the transaction made
   * before (a partner's row per slot and kind took 1,700 updates a statement at a million).
   */
  async function insertOrders(from: number, to: number): Promise<number> {
    const started = Date.now();
    for (let at = from; at <= to; at += 10_000)
      await db.query(
        `INSERT INTO orders (partner_id, client_id, partner_order_ref, type, source, status, debit, debit_asset_id,
           fee_asset_id, created_at, transitioned_at, updated_at)
         SELECT $1, (SELECT min(id) FROM clients) + (i % $4::int), 'r-' || i,
           (ARRAY['deposit','withdrawal','buy','sell'])[1 + i % 4],
           (ARRAY['bank','market','card'])[1 + i % 3],
           (ARRAY['completed','completed','completed','rejected','failed'])[1 + i % 5],
           1, 'AED', 'AED', t, t, t
         FROM generate_series($2::int, $3::int) i,
           LATERAL (SELECT timestamptz '2026-01-01' + i * interval '25 seconds' AS t) x`,
        [partner, at, Math.min(to, at + 9_999), clientCount],
      );
    // Every table, the orders' events among them (an event per order): left to autovacuum, their
    // vacuum would run while the pages are timed.
    await db.query("VACUUM ANALYZE");
    // Compacted, as the service keeps them: each statement updates each count row once per order
    // in one transaction, where no version can be pruned while it runs (74 MB of them for 3,000
    // rows at a million, in one statement). The service writes each order in a transaction of its
    // own, and the rows' updates (HOT, fillfactor 50) are pruned in place.
    await db.query("VACUUM FULL order_counts, order_slot_counts");
    await db.query("VACUUM ANALYZE order_counts, order_slot_counts");
    // The seed's pages written out now, not while the pages are timed (a checkpoint spreads a
    // gigabyte's writes over minutes).
    await db.query("CHECKPOINT");
    return Date.now() - started;
  }

  /** Housekeeping's roll-up of the days (OrdersService.rollDays), run to the end. */
  async function rollDays(): Promise<{ ms: number; days: number }> {
    const started = Date.now();
    let days = 0;
    for (;;) {
      const run = await new OrdersService(handle.db, systemClock).rollDays({ budgetMs: 5_000 });
      days += run.days;
      if (run.until === null)
        throw new Error(
          `${run.unseen} sessions of another role hide their transactions: no day may be rolled`,
        );
      if (run.done) break;
    }
    await db.query("VACUUM ANALYZE order_day_counts");
    await db.query("CHECKPOINT");
    return { ms: Date.now() - started, days };
  }

  const none: OrderFilter = { clientId: null, sources: [], statuses: [], from: null, to: null };
  const pages: [string, OrderFilter, number][] = [
    ["first page, no filter", none, 1],
    ["page 50, no filter", none, 50],
    // A range that leaves none of the orders out: the kept counts, after two index probes (counted
    // until the night of 29 November 2026, as every page was before migration 0019).
    ["first page, from 1970", { ...none, from: "1970-01-01T00:00:00Z" }, 1],
    // A range that leaves out the first day alone: the kept counts less that day's orders, counted
    // (until 30 November 2026 it counted every order after it).
    ["first page, from 2 January (less 1 January)", { ...none, from: "2026-01-02T00:00:00Z" }, 1],
    // Less both ends: 1 January, and at 1,000,000 the orders after September (16 days of them).
    [
      "first page, 2 January to September (less both ends)",
      { ...none, from: "2026-01-02T00:00:00Z", to: "2026-09-30T23:59:59Z" },
      1,
    ],
    // A range that keeps less time than it leaves out, from the middle of the orders at 1,000,000
    // (none at 10,000): the rows of the days it keeps, rolled up (until 1 December 2026 it counted
    // every order it kept); with a status, and starting at noon (half a day counted).
    ["first page, from 1 June (rolled days)", { ...none, from: "2026-06-01T00:00:00Z" }, 1],
    [
      "status=completed, from 1 June noon",
      { ...none, statuses: ["completed"], from: "2026-06-01T12:00:00Z" },
      1,
    ],
    ["1 June to 31 July", { ...none, from: "2026-06-01T00:00:00Z", to: "2026-07-31T23:59:59.999999Z" }, 1],
    // Under a client filter a range is counted: the days are rolled up per partner.
    ["one client, from 1 June", { ...none, clientId: client500, from: "2026-06-01T00:00:00Z" }, 1],
    ["one client", { ...none, clientId: client500 }, 1],
    ["status=completed", { ...none, statuses: ["completed"] }, 1],
    [
      "source=bank, status=rejected+failed",
      { ...none, sources: ["bank"], statuses: ["rejected", "failed"] },
      1,
    ],
    ["one client, status=completed", { ...none, clientId: client500, statuses: ["completed"] }, 1],
    [
      "one client, bank, completed, a month",
      {
        clientId: client500,
        sources: ["bank"],
        statuses: ["completed"],
        from: "2026-01-01T00:00:00Z",
        to: "2026-01-31T23:59:59Z",
      },
      1,
    ],
    ["one day", { ...none, from: "2026-01-02T00:00:00Z", to: "2026-01-02T23:59:59Z" }, 1],
  ];
  /** The small partner's pages: timed at both sizes of the first partner. */
  const smallPages: [string, OrderFilter, number][] = [
    ["small partner: first page", none, 1],
    ["small partner: one client", { ...none, clientId: smallClient }, 1],
    ["small partner: one day", { ...none, from: "2026-03-01T00:00:00Z", to: "2026-03-01T23:59:59Z" }, 1],
  ];
  const cases: [string, string, OrderFilter, number][] = [
    ...pages.map(([name, filter, page]): [string, string, OrderFilter, number] => [
      name,
      partner,
      filter,
      page,
    ]),
    ...smallPages.map(([name, filter, page]): [string, string, OrderFilter, number] => [
      name,
      small,
      filter,
      page,
    ]),
  ];
  const percentile = (sorted: number[], p: number) =>
    sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))]!;
  // Each size is timed on connections of its own, as the service's would be. PostgreSQL weighs a
  // prepared statement's plan made once against the plans it made for each run so far, on that
  // connection: statements first run at 10,000 orders would be weighed at a million against
  // plans made at 10,000, as no connection of the service sees its orders grow a hundredfold.
  // Also counted: how many of the timed runs PostgreSQL ran on the plan it made once, the others
  // planned for their values (pg_prepared_statements, of the one connection).
  type Figures = { p50: number; p95: number; total: number; once: number };
  async function timePages(): Promise<Map<string, Figures>> {
    const figures = new Map<string, Figures>();
    const timed = await openDatabase({ databaseUrl: url.toString(), pgliteDir: null, poolSize: 1 });
    const runsOnce = async () =>
      Number(
        (
          await sql<{
            n: string;
          }>`SELECT coalesce(sum(generic_plans), 0) AS n FROM pg_prepared_statements`.execute(timed.db)
        ).rows[0]?.n,
      );
    try {
      for (const [name, of, filter, page] of cases) {
        const times: number[] = [];
        let total = 0;
        let once = 0;
        for (let i = 0; i < runs + 5; i++) {
          if (i === 5) once = -(await runsOnce());
          const started = process.hrtime.bigint();
          total = (await listOrders(timed.db, of, filter, page, 20)).total;
          if (i >= 5) times.push(Number(process.hrtime.bigint() - started) / 1e6);
        }
        once += await runsOnce();
        times.sort((a, b) => a - b);
        figures.set(name, { p50: percentile(times, 0.5), p95: percentile(times, 0.95), total, once });
      }
    } finally {
      await timed.close();
    }
    return figures;
  }

  out(`orders list statement (listOrders, page_size 20), PostgreSQL, ${runs} runs after 5 warm-up\n`);
  if (reuse !== null) {
    const figures = await timePages();
    out(`on ${reuse} as it is, seeding nothing:`);
    for (const [name, f] of figures)
      out(
        `${name.padEnd(52)} ${String(f.total).padStart(7)}  ${f.p50.toFixed(2).padStart(7)}  ${f.p95.toFixed(2).padStart(7)}  ${String(f.once).padStart(4)}`,
      );
    out(`(total, p50 and p95 in ms, and how many of the ${runs} runs were on the plan made once)\n`);
  } else {
    const seed10k = await insertOrders(1, 10_000);
    const roll10k = await rollDays();
    const at10k = await timePages();
    // The days are rolled again from the first, after the orders are in: as in service, where a
    // day is rolled once it is over and its rows are written once, in order of days. Left rolled,
    // each of the 990,000 orders would add itself to its day's row as an order written late does
    // (its day before its transaction's): the 2,610 rows then took 71 MB of dead versions, and a
    // range's sum read a page for every few rows, as a table the service writes never does.
    await db.query(`DELETE FROM order_day_counts WHERE partner_id = $1`, [partner]);
    await db.query(`DELETE FROM order_days_rolled WHERE partner_id = $1`, [partner]);
    const seed1m = await insertOrders(10_001, 1_000_000);
    const roll1m = await rollDays();
    const at1m = await timePages();
    out(
      `seeded 10,000 orders in ${seed10k} ms, then 990,000 more in ${seed1m} ms (triggers on, then VACUUM ANALYZE of every table, the counts compacted, a checkpoint)`,
    );
    out(
      `rolled their days up: ${roll10k.days} days in ${roll10k.ms} ms, then ${roll1m.days} more in ${roll1m.ms} ms\n`,
    );
    const rows = [["page", "total@10k", "p50", "p95", "once", "total@1M", "p50", "p95", "once", "p95 ratio"]];
    for (const [name] of cases) {
      const a = at10k.get(name)!;
      const b = at1m.get(name)!;
      rows.push([
        name,
        String(a.total),
        a.p50.toFixed(2),
        a.p95.toFixed(2),
        String(a.once),
        String(b.total),
        b.p50.toFixed(2),
        b.p95.toFixed(2),
        String(b.once),
        (b.p95 / a.p95).toFixed(2),
      ]);
    }
    const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => r[i]!.length)));
    for (const r of rows)
      out(r.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join("  "));
    out(`(times in ms; once: how many of the ${runs} runs were on the plan made once)\n`);
  }

  const queries: [string, string, unknown[]][] = [
    [
      "total, no filter: the kept counts per slot (migration 0028)",
      `SELECT coalesce(sum(k.orders), 0) FROM order_slot_counts k WHERE k.partner_id = $1`,
      [partner],
    ],
    [
      "what they replace: the kept counts per client (migrations 0019, 0020)",
      `SELECT coalesce(sum(k.orders), 0) FROM order_counts k WHERE k.partner_id = $1`,
      [partner],
    ],
    [
      "total, one client: the kept count",
      `SELECT coalesce(sum(k.orders), 0) FROM order_counts k WHERE k.partner_id = $1 AND k.client_id = $2`,
      [partner, client500],
    ],
    [
      "total for a date range (one day): counted",
      `SELECT count(*) FROM orders o WHERE o.partner_id = $1 AND o.created_at >= '2026-05-01' AND o.created_at <= '2026-05-02'`,
      [partner],
    ],
    [
      "total from 2 January: the kept counts less the orders before it, counted",
      `SELECT (SELECT coalesce(sum(k.orders), 0) FROM order_slot_counts k WHERE k.partner_id = $1)
            - (SELECT count(*) FROM orders o WHERE o.partner_id = $1 AND o.created_at < '2026-01-02')`,
      [partner],
    ],
    [
      "total from 1 June: the rows of the days rolled up (migration 0026), and the orders after them, counted",
      `SELECT (SELECT coalesce(sum(d.orders), 0) FROM order_day_counts d
                WHERE d.partner_id = $1 AND d.day >= '2026-06-01'
                  AND d.day < (SELECT r.until FROM order_days_rolled r WHERE r.partner_id = $1))
            + (SELECT count(*) FROM orders o WHERE o.partner_id = $1
                AND o.created_at >= (SELECT r.until FROM order_days_rolled r WHERE r.partner_id = $1)::timestamp AT TIME ZONE 'UTC'
                AND o.created_at <= 'infinity'::timestamptz)`,
      [partner],
    ],
    [
      "what they replace: counting the orders from 1 June",
      `SELECT count(*) FROM orders o WHERE o.partner_id = $1 AND o.created_at >= '2026-06-01'`,
      [partner],
    ],
    [
      "total with status=completed: the kept counts per slot (migration 0028)",
      `SELECT coalesce(sum(k.orders), 0) FROM order_slot_counts k WHERE k.partner_id = $1 AND k.status = any($2::text[])`,
      [partner, ["completed"]],
    ],
    [
      "what they replace: counting the partner's completed orders",
      `SELECT count(*) FROM orders o WHERE o.partner_id = $1 AND o.status = 'completed'`,
      [partner],
    ],
    [
      "what the kept counts replace: counting every order of the partner",
      `SELECT count(*) FROM orders o WHERE o.partner_id = $1`,
      [partner],
    ],
  ];
  for (const [name, text, params] of queries) {
    const plan = await db.query(`EXPLAIN (ANALYZE, BUFFERS, COSTS OFF) ${text}`, params);
    out(`-- ${name}\n${plan.rows.map((r) => r["QUERY PLAN"]).join("\n")}\n`);
  }
} finally {
  await handle.close().catch(() => {});
  await db.end().catch(() => {});
  if (keep) out(`kept the database ${dbName}: drop it by hand (DROP DATABASE ${dbName})`);
  else await admin.query(`DROP DATABASE IF EXISTS ${dbName} WITH (FORCE)`);
  await admin.end();
}
