// `npm run bench:console`: the console's page times with 10,000 and with 1,000,000 orders on
// PostgreSQL (docs/operations.md, "Console page times").
//
// For each size it makes a fresh database, migrates it, and seeds it in a few statements: one
// partner, 1,000 verified clients, their AED accounts and the partner's omnibus slots (`houseSlots`), the
// orders (deposits and withdrawals by bank and card; 80% completed, the rest rejected or failed),
// two postings for each completed order (the client's account against the omnibus slot of the
// client, as the service posts them), every balance set to the sum of its postings, and one audit
// entry per 5 orders. The seed writes with session_replication_role = replica, which skips the
// tables' triggers: the per-statement postings balance check, the foreign keys, the event feed's
// rows for new orders (no events are written) and the kept counts of orders (set by the seed). The
// ledger stays consistent; the benchmark runs the ledger check and says so. No client has documents.
//
// It then starts the admin app in this process (no network), signs an operator in, and times each
// page (the full request: route, services, queries, HTML) a number of times, printing p50 and p95
// per page, and the plans of the order list's filters (the index each one uses).
//
// Usage: npm run bench:console [-- --sizes 10000,1000000 --runs 30] (DATABASE_URL, default
// postgres://postgres@127.0.0.1:5432/postgres, must be a superuser for the replica role).

import crypto from "node:crypto";
import { performance } from "node:perf_hooks";
import pg from "pg";
import { buildAdminApp } from "../packages/server/src/app.ts";
import { loadConfig } from "../packages/server/src/config/config.ts";
import { openDatabase } from "../packages/server/src/db/database.ts";
import { migrate } from "../packages/server/src/db/migrate.ts";
import { englishCountryName, seedCatalog } from "../packages/server/src/modules/catalog/index.ts";
import { houseSlots } from "../packages/server/src/modules/ledger/legs.ts";
import { systemClock } from "../packages/server/src/platform/clock.ts";
import { systemRandom } from "../packages/server/src/platform/random.ts";
import { buildServices } from "../packages/server/src/services.ts";

function arg(name: string, fallback: string): string {
  const i = process.argv.indexOf(`--${name}`);
  return i === -1 ? fallback : (process.argv[i + 1] ?? fallback);
}

const baseUrl = process.env.DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/postgres";
const sizes = arg("sizes", "10000,1000000").split(",").map(Number);
const runs = Number(arg("runs", "30"));
const clients = 1000;
const adminToken = "bench-console-admin-token-0123456789";

function pct(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((sorted.length - 1) * p))] ?? Number.NaN;
}

async function seed(db: pg.Client, orders: number): Promise<{ partner: string }> {
  const partner = crypto.randomUUID();
  await db.query("SET session_replication_role = replica");
  await db.query("BEGIN");
  await db.query(`INSERT INTO partners (id, name) VALUES ($1, 'Bench partner')`, [partner]);
  await db.query(
    `INSERT INTO clients (partner_id, partner_client_id, account_type, name, birth_date, status, email, phone,
       residency_id, citizenship_id, place_of_birth_id, government_id_number, government_id_doe, address,
       employment, trading_volume, account_purpose)
     SELECT $1, 'c-' || i, 'personal', 'Client ' || i, '1990-01-01', 'verified', 'c' || i || '@x.test',
       '+9715' || lpad(i::text, 8, '0'), 'ae', 'ae', 'ae', 'g-' || i, '2030-01-01', '{}', '{"status":"retired"}',
       'x', '{long_term_investment}'
     FROM generate_series(1, ${clients}) i`,
    [partner],
  );
  await db.query(
    `INSERT INTO accounts (kind, partner_id, client_id, asset_id, balance, slot)
     SELECT 'client', $1, id, 'AED', 0, 0 FROM clients WHERE partner_id = $1
     UNION ALL SELECT 'omnibus', $1, NULL, 'AED', 0, s FROM generate_series(0, ${houseSlots - 1}) s`,
    [partner],
  );
  // Client i % 1000 gets order i; each client's orders cycle deposit, deposit, deposit, withdrawal
  // (by i / 1000), so no client ever holds less than zero. One order every 25 s from 2026-01-01.
  await db.query(
    `INSERT INTO orders (partner_id, client_id, partner_order_ref, type, source, status, debit, debit_asset_id,
       credit, credit_asset_id, fee_asset_id, created_at, transitioned_at, updated_at)
     SELECT $1, c0.id + (i % ${clients}), 'r-' || i, k.type, (ARRAY['bank','card'])[1 + (i / 7) % 2],
       (ARRAY['completed','completed','completed','completed','completed','completed','completed','completed',
              'rejected','failed'])[1 + (i / 3) % 10],
       CASE WHEN k.type = 'deposit' THEN 100 END, CASE WHEN k.type = 'deposit' THEN 'AED' END,
       CASE WHEN k.type = 'withdrawal' THEN 10 END, CASE WHEN k.type = 'withdrawal' THEN 'AED' END,
       'AED', t, t, t
     FROM generate_series(1, ${orders}) i,
       LATERAL (SELECT timestamptz '2026-01-01' + i * interval '25 seconds' AS t) x,
       LATERAL (SELECT CASE WHEN (i / ${clients}) % 4 = 3 THEN 'withdrawal' ELSE 'deposit' END AS type) k,
       (SELECT min(id) AS id FROM clients WHERE partner_id = $1) c0`,
    [partner],
  );
  await db.query(
    `INSERT INTO postings (order_id, account_id, asset_id, amount)
     SELECT o.id, a.id, 'AED', CASE WHEN o.type = 'deposit' THEN 100::numeric ELSE -10::numeric END
       FROM orders o JOIN accounts a ON a.kind = 'client' AND a.client_id = o.client_id AND a.asset_id = 'AED'
      WHERE o.status = 'completed'
     UNION ALL
     SELECT o.id, h.id, 'AED', CASE WHEN o.type = 'deposit' THEN -100::numeric ELSE 10::numeric END
       FROM orders o JOIN accounts h ON h.kind = 'omnibus' AND h.partner_id = o.partner_id
        AND h.slot = o.client_id % ${houseSlots} AND h.asset_id = 'AED'
      WHERE o.status = 'completed'`,
  );
  // The trigger that keeps each client's counts of orders (migrations 0019, 0020) is skipped too: the counts
  // are set here, as the balances are below.
  await db.query(
    `INSERT INTO order_counts (client_id, source, status, partner_id, orders)
     SELECT client_id, source, status, partner_id, count(*) FROM orders
      GROUP BY client_id, source, status, partner_id`,
  );
  await db.query(
    `UPDATE accounts a SET balance = p.total
       FROM (SELECT account_id, sum(amount) AS total FROM postings GROUP BY account_id) p
      WHERE p.account_id = a.id`,
  );
  await db.query(
    `INSERT INTO audit_log (at, actor_kind, actor_id, actor_email, action, target_type, target_id, before, after, reason)
     SELECT timestamptz '2026-01-01' + i * interval '125 seconds', 'token', NULL, NULL,
       (ARRAY['client.status','client.active','pair.price','partner.update'])[1 + i % 4], 'client',
       $1 || '/c-' || (i % ${clients}), '{"status":"verified"}', '{"status":"under_review"}', 'bench'
     FROM generate_series(1, ${Math.max(1, orders / 5)}) i`,
    [partner],
  );
  await db.query("COMMIT");
  await db.query("SET session_replication_role = origin");
  await db.query("ANALYZE");
  return { partner };
}

/** The index each order-list filter's plan uses (EXPLAIN of the statement the records store runs). */
async function plans(db: pg.Client, partner: string, clientId: number, midAt: string): Promise<string[][]> {
  const select = `SELECT o.*, c.partner_client_id FROM orders o JOIN clients c ON c.id = o.client_id`;
  const order = `ORDER BY o.created_at DESC, o.id DESC LIMIT 51`;
  const cases: [string, string, unknown[]][] = [
    ["no filter", `${select} ${order}`, []],
    ["partner", `${select} WHERE o.partner_id = $1 ${order}`, [partner]],
    [
      "partner + client",
      `${select} WHERE o.partner_id = $1 AND o.client_id = $2 ${order}`,
      [partner, clientId],
    ],
    ["type", `${select} WHERE o.type = 'withdrawal' ${order}`, []],
    ["source", `${select} WHERE o.source = 'card' ${order}`, []],
    ["status", `${select} WHERE o.status = 'failed' ${order}`, []],
    ["partner + status", `${select} WHERE o.partner_id = $1 AND o.status = 'rejected' ${order}`, [partner]],
    [
      "type + source + status",
      `${select} WHERE o.type = 'withdrawal' AND o.source = 'card' AND o.status = 'failed' ${order}`,
      [],
    ],
    [
      "time range",
      `${select} WHERE o.created_at >= $1 AND o.created_at <= $1::timestamptz + interval '1 day' ${order}`,
      [midAt],
    ],
    ["deep keyset page", `${select} WHERE (o.created_at, o.id) < ($1::timestamptz, 1) ${order}`, [midAt]],
  ];
  const out: string[][] = [];
  for (const [name, sql, params] of cases) {
    const res = await db.query(`EXPLAIN (ANALYZE, COSTS OFF) ${sql}`, params);
    const text = res.rows.map((r) => r["QUERY PLAN"] as string).join("\n");
    const indexes = [
      ...text.matchAll(/(?:Index(?: Only)? Scan(?: Backward)? using|Bitmap Index Scan on) (\w+)/g),
    ].map((m) => m[1]);
    const ms = /Execution Time: ([\d.]+) ms/.exec(text)?.[1] ?? "?";
    const seq = /Seq Scan on orders/.test(text) ? " + SEQ SCAN" : "";
    const sort = /Sort\b/.test(text) ? " + sort" : "";
    out.push([name, `${[...new Set(indexes)].join(", ") || "none"}${seq}${sort}`, ms]);
  }
  return out;
}

async function benchSize(orders: number): Promise<void> {
  const dbName = `cp_console_bench_${orders}_${process.pid}`;
  const admin = new pg.Client({ connectionString: baseUrl });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${dbName}`);
  const url = new URL(baseUrl);
  url.pathname = `/${dbName}`;
  const raw = new pg.Client({ connectionString: url.toString() });
  try {
    const handle = await openDatabase({ databaseUrl: url.toString(), pgliteDir: null });
    await migrate(handle);
    await seedCatalog(handle.db, englishCountryName);
    await raw.connect();
    const started = performance.now();
    const { partner } = await seed(raw, orders);
    process.stdout.write(
      `\n== ${orders.toLocaleString("en")} orders (seeded in ${Math.round(performance.now() - started)} ms)\n`,
    );

    const services = buildServices({
      config: loadConfig({ ADMIN_TOKEN: adminToken, PRICE_FEED: "manual", DATABASE_URL: url.toString() }),
      database: handle,
      clock: systemClock,
      random: systemRandom,
    });
    const app = buildAdminApp(services, {
      logger: false,
      adminToken,
      metricsText: async () => ({ contentType: "text/plain", body: "" }),
    });
    await app.ready();
    const password = "correct horse battery staple";
    const made = await app.inject({
      method: "POST",
      url: "/admin/operators",
      headers: { authorization: `Bearer ${adminToken}` },
      payload: { email: "bench@broker.example", role: "viewer", password },
    });
    if (made.statusCode !== 201) throw new Error(`operator: ${made.body}`);
    const signIn = await app.inject({
      method: "POST",
      url: "/admin/session",
      payload: { email: "bench@broker.example", password },
    });
    const cookie = String(signIn.headers["set-cookie"]).split(";")[0]!;

    const mid = (
      await raw.query(`SELECT id, created_at FROM orders ORDER BY id OFFSET $1 LIMIT 1`, [
        Math.floor(orders / 2),
      ])
    ).rows[0];
    const midAt = (mid.created_at as Date).toISOString();
    const client = (await raw.query(`SELECT id FROM clients WHERE partner_client_id = 'c-500'`)).rows[0]
      .id as number;
    const auditMid = (
      await raw.query(`SELECT id, at FROM audit_log ORDER BY id OFFSET $1 LIMIT 1`, [Math.floor(orders / 10)])
    ).rows[0];
    const q = (o: Record<string, string>) => new URLSearchParams(o).toString();
    const pages: [string, string][] = [
      ["orders: first page", "/console/orders"],
      ["orders: status=failed", `/console/orders?${q({ status: "failed" })}`],
      [
        "orders: withdrawal+card+failed",
        `/console/orders?${q({ type: "withdrawal", source: "card", status: "failed" })}`,
      ],
      ["orders: partner+client", `/console/orders?${q({ partner, client: "c-500" })}`],
      [
        "orders: one day",
        `/console/orders?${q({ from: midAt, to: new Date(Date.parse(midAt) + 86_400_000).toISOString() })}`,
      ],
      ["orders: deep keyset page", `/console/orders?${q({ after_at: midAt, after_id: String(mid.id) })}`],
      ["order page", `/console/orders/${mid.id}`],
      ["client page", `/console/clients/${partner}/c-500`],
      ["ledger page", "/console/ledger"],
      ["audit: first page", "/console/audit"],
      ["audit: action filter", `/console/audit?${q({ action: "pair.price" })}`],
      ["audit: target filter", `/console/audit?${q({ target_type: "client", target: `${partner}/c-500` })}`],
      [
        "audit: deep keyset page",
        `/console/audit?${q({ after_at: (auditMid.at as Date).toISOString(), after_id: String(auditMid.id) })}`,
      ],
      ["ledger check (on demand)", "/console/ledger?check=1"],
    ];
    const rows: string[][] = [];
    for (const [name, path] of pages) {
      const n = name.startsWith("ledger check") ? Math.min(runs, 3) : runs;
      const times: number[] = [];
      let body = "";
      for (let i = 0; i < n; i++) {
        const t0 = performance.now();
        const res = await app.inject({ method: "GET", url: path, headers: { cookie } });
        times.push(performance.now() - t0);
        if (res.statusCode !== 200) throw new Error(`${name}: ${res.statusCode} ${res.body.slice(0, 300)}`);
        body = res.body;
      }
      if (name.startsWith("ledger check") && !body.includes("The ledger is consistent")) {
        throw new Error("the seeded ledger is not consistent");
      }
      times.sort((a, b) => a - b);
      rows.push([name, String(n), pct(times, 0.5).toFixed(1), pct(times, 0.95).toFixed(1)]);
    }
    process.stdout.write("page                             runs   p50 ms   p95 ms\n");
    for (const [name, n, p50, p95] of rows) {
      process.stdout.write(`${name!.padEnd(32)} ${n!.padStart(4)} ${p50!.padStart(8)} ${p95!.padStart(8)}\n`);
    }
    process.stdout.write(
      "(the ledger check reported the seeded ledger consistent)\n\norder list plans (EXPLAIN ANALYZE):\n",
    );
    for (const [name, plan, ms] of await plans(raw, partner, client, midAt)) {
      process.stdout.write(`  ${name!.padEnd(24)} ${plan!.padEnd(44)} ${ms} ms\n`);
    }
    await app.close();
    await handle.close();
  } finally {
    await raw.end().catch(() => {});
    await admin.query(`DROP DATABASE IF EXISTS ${dbName} WITH (FORCE)`);
    await admin.end();
  }
}

process.stdout.write(
  `console page times (in-process admin app, PostgreSQL at ${new URL(baseUrl).host}, ${runs} runs per page)\n`,
);
for (const n of sizes) await benchSize(n);
