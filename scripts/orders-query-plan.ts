// Evidence for docs/operations.md: fills a fresh PostgreSQL database with a million orders (one
// partner, 1,000 clients, all sources and statuses) and prints the plans and timings of the
// orders list queries the service runs. Usage: node scripts/orders-query-plan.ts [DATABASE_URL]

import crypto from "node:crypto";
import pg from "pg";
import { openDatabase } from "../packages/server/src/db/database.ts";
import { migrate } from "../packages/server/src/db/migrate.ts";
import { englishCountryName, seedCatalog } from "../packages/server/src/modules/catalog/index.ts";

const baseUrl = process.argv[2] ?? process.env.DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/postgres";
const dbName = `cp_plan_${Date.now()}`;
const admin = new pg.Client({ connectionString: baseUrl });
await admin.connect();
await admin.query(`CREATE DATABASE ${dbName}`);
const url = new URL(baseUrl);
url.pathname = `/${dbName}`;
const db = new pg.Client({ connectionString: url.toString() });
try {
  const handle = await openDatabase({ databaseUrl: url.toString(), pgliteDir: null });
  await migrate(handle);
  await seedCatalog(handle.db, englishCountryName);
  await handle.close();
  await db.connect();
  const partner = crypto.randomUUID();
  await db.query(`INSERT INTO partners (id, name) VALUES ($1, 'plan')`, [partner]);
  await db.query(
    `INSERT INTO clients (partner_id, partner_client_id, account_type, name, birth_date, status, email, phone,
       residency_id, citizenship_id, place_of_birth_id, government_id_number, government_id_doe, address,
       employment, trading_volume, account_purpose)
     SELECT $1, 'c-' || i, 'personal', 'n', '1990-01-01', 'verified', 'c' || i || '@x.test',
       '+9715' || lpad(i::text, 8, '0'), 'ae', 'ae', 'ae', 'g-' || i, '2030-01-01', '{}', '{"status":"retired"}',
       'x', '{long_term_investment}'
     FROM generate_series(1, 1000) i`,
    [partner],
  );
  const started = Date.now();
  await db.query(
    `INSERT INTO orders (partner_id, client_id, partner_order_ref, type, source, status, debit, debit_asset_id,
       fee_asset_id, created_at, transitioned_at, updated_at)
     SELECT $1, (SELECT min(id) FROM clients) + (i % 1000), 'r-' || i,
       (ARRAY['deposit','withdrawal','buy','sell'])[1 + i % 4],
       (ARRAY['bank','market','card'])[1 + i % 3],
       (ARRAY['completed','completed','completed','rejected','failed'])[1 + i % 5],
       1, 'AED', 'AED', t, t, t
     FROM generate_series(1, 1000000) i, LATERAL (SELECT timestamptz '2026-01-01' + i * interval '25 seconds' AS t) x`,
    [partner],
  );
  await db.query("ANALYZE");
  process.stdout.write(`inserted 1,000,000 orders in ${Date.now() - started} ms\n\n`);

  const client500 = (await db.query(`SELECT id FROM clients WHERE partner_client_id = 'c-500'`)).rows[0].id;
  const queries: [string, string, unknown[]][] = [
    [
      "first page, no filter",
      `SELECT o.*, c.partner_client_id FROM orders o JOIN clients c ON c.id = o.client_id
       WHERE o.partner_id = $1 ORDER BY o.created_at DESC, o.id DESC LIMIT 10 OFFSET 0`,
      [partner],
    ],
    [
      "first page of one client's completed bank orders in a month",
      `SELECT o.*, c.partner_client_id FROM orders o JOIN clients c ON c.id = o.client_id
       WHERE o.partner_id = $1 AND o.client_id = $2 AND o.source IN ('bank') AND o.status IN ('completed')
         AND o.created_at >= '2026-03-01' AND o.created_at <= '2026-03-31'
       ORDER BY o.created_at DESC, o.id DESC LIMIT 10 OFFSET 0`,
      [partner, client500],
    ],
    [
      "total for one client",
      `SELECT count(*) FROM orders o WHERE o.partner_id = $1 AND o.client_id = $2`,
      [partner, client500],
    ],
    [
      "total for a date range (one day)",
      `SELECT count(*) FROM orders o WHERE o.partner_id = $1 AND o.created_at >= '2026-05-01' AND o.created_at <= '2026-05-02'`,
      [partner],
    ],
    [
      "total, no filter (the whole partner)",
      `SELECT count(*) FROM orders o WHERE o.partner_id = $1`,
      [partner],
    ],
  ];
  for (const [name, text, params] of queries) {
    const plan = await db.query(`EXPLAIN (ANALYZE, BUFFERS, COSTS OFF) ${text}`, params);
    process.stdout.write(`-- ${name}\n${plan.rows.map((r) => r["QUERY PLAN"]).join("\n")}\n\n`);
  }
} finally {
  await db.end().catch(() => {});
  await admin.query(`DROP DATABASE IF EXISTS ${dbName} WITH (FORCE)`);
  await admin.end();
}
