// The database's side of a deposit, without the service: pgbench replays the statements the
// service sends for one signed deposit, in two shapes, against a fresh database with the
// project's schema, then runs TPC-B there for scale. It isolates what the number of statements
// and round trips costs PostgreSQL (docs/decisions.md, "One call per order").
//
//   nine statements  the path before fund_order(): read the partner, record the signature, read
//                    the facts, BEGIN, insert the order, upsert the client's and the house
//                    account, insert the postings, COMMIT
//   three statements the path now: read the partner and record the signature in one statement,
//                    read the client and the asset, fund_order()
//
// Both run on the current schema (composite keys, per-statement balance check), with the extended
// query protocol and unnamed statements (a parse and plan per statement, as node-postgres sends
// them), 64 connections. The statements are written out here by hand from the service's queries; the
// signature is 64 random-looking bytes. Environment: BENCH_DATABASE_URL, BENCH_PGBENCH (see
// deposits.ts), BENCH_CONNECTIONS.

import fs from "node:fs";
import path from "node:path";
import { generateKeyPair } from "@counterpart/protocol";
import { sql } from "kysely";
import { openDatabase } from "../../packages/server/src/db/database.ts";
import { migrate } from "../../packages/server/src/db/migrate.ts";
import { englishCountryName, seedCatalog } from "../../packages/server/src/modules/catalog/index.ts";
import { checkLedger } from "../../packages/server/src/modules/ledger/ledger-store.ts";
import { insertClient } from "../../packages/server/src/testing/fixtures.ts";
import { clockTicksPerSecond, fixed, printTable, type Scenario, type ScenarioReport } from "../lib.ts";
import { findPgbench, type PgbenchResult, pgbenchRun, runCommand } from "../pgbench.ts";
import { freshBenchDatabase } from "../proc.ts";

const clientCount = 64;

function scripts(partnerId: string, publicKeyPem: string, firstClientId: number): Record<string, string> {
  const p = `'${partnerId}'`;
  // pgbench variables: c is the client (1..64), ref a fresh reference; :client_id is pgbench's own
  // connection number, which keeps references of different connections apart.
  const head = [
    `\\set c random(1, ${clientCount})`,
    `\\set id :c + ${firstClientId - 1}`,
    "\\set ref random(1, 2000000000)",
  ];
  const clientAndAsset = `(SELECT json_build_object('id', id, 'partner_client_id', partner_client_id, 'status', status, 'active', active)
     FROM clients WHERE partner_id = ${p} AND partner_client_id = 'client-' || :c) AS client,
  (SELECT json_build_object('type', type, 'published', published, 'depositable', depositable, 'withdrawable', withdrawable, 'decimal_places', decimal_places)
     FROM assets WHERE id = 'AED') AS asset;`;
  // Before, the facts query also probed the reference; now the unique index alone decides it.
  const facts = `SELECT EXISTS (SELECT 1 FROM orders WHERE partner_id = ${p} AND partner_order_ref = 'r-' || :ref || '-' || :client_id) AS ref_taken,
  ${clientAndAsset}`;
  const signature = "sha512((random() || ' ' || :client_id)::text::bytea)";
  return {
    "nine statements": [
      ...head,
      `SELECT * FROM partners WHERE id = ${p};`,
      `INSERT INTO used_signatures (partner_id, signature, expires_at) VALUES (${p}, ${signature}, now() + interval '61 s') ON CONFLICT DO NOTHING RETURNING partner_id;`,
      facts,
      "BEGIN;",
      `INSERT INTO orders (partner_id, client_id, partner_order_ref, type, source, status, price, debit, debit_asset_id, credit, credit_asset_id, fee, fee_asset_id, vat) VALUES (${p}, :id, 'r-' || :ref || '-' || :client_id, 'deposit', 'bank', 'completed', NULL, '1.00', 'AED', NULL, NULL, '0', 'AED', '0') RETURNING *`,
      "\\gset o_",
      `INSERT INTO accounts (kind, partner_id, client_id, asset_id, balance, slot) VALUES ('client', ${p}, :id, 'AED', '1.00', 0) ON CONFLICT ON CONSTRAINT accounts_owner_key DO UPDATE SET balance = accounts.balance + excluded.balance RETURNING id AS a1`,
      "\\gset",
      `INSERT INTO accounts (kind, partner_id, client_id, asset_id, balance, slot) VALUES ('omnibus', ${p}, NULL, 'AED', '-1.00', :id % 16) ON CONFLICT ON CONSTRAINT accounts_owner_key DO UPDATE SET balance = accounts.balance + excluded.balance RETURNING id AS a2`,
      "\\gset",
      "INSERT INTO postings (order_id, account_id, asset_id, amount) VALUES (:o_id, :a1, 'AED', '1.00'), (:o_id, :a2, 'AED', '-1.00');",
      "COMMIT;",
    ].join("\n"),
    "three statements": [
      ...head,
      `WITH p AS (SELECT id, public_key_pem, allowed_ips, active FROM partners WHERE id = ${p}),
rec AS (INSERT INTO used_signatures (partner_id, signature, expires_at)
        SELECT p.id, ${signature}, now() + interval '61 s' FROM p
        WHERE p.active AND p.public_key_pem = '${publicKeyPem}' AND p.allowed_ips = '{127.0.0.1/32}'::text[]
        ON CONFLICT DO NOTHING RETURNING 1)
SELECT p.*, EXISTS (SELECT 1 FROM rec) AS recorded FROM p;`,
      `SELECT ${clientAndAsset}`,
      `SELECT * FROM fund_order(${p}, :id, 'r-' || :ref || '-' || :client_id, 'deposit', 'AED', '1.00'::numeric, (:id % 16)::smallint, '{client,omnibus}'::text[], ARRAY[:id, NULL]::bigint[], '{AED,AED}'::text[], '{1.00,-1.00}'::numeric[]);`,
    ].join("\n"),
  };
}

export const depositSql: Scenario = {
  name: "deposit-sql",
  description:
    "the database's side of a deposit: its statements replayed by pgbench, nine vs three, and TPC-B",

  async run(ctx): Promise<ScenarioReport> {
    const connections = process.env.BENCH_CONNECTIONS ? ctx.connections : 64;
    const pgbench = findPgbench();
    const { dbName, databaseUrl } = await freshBenchDatabase(ctx.cleanup);
    process.stdout.write(`bench: database ${dbName}; pgbench ${pgbench}\n`);

    const database = await openDatabase({ databaseUrl, pgliteDir: null, poolSize: 2 });
    ctx.cleanup.add("close the bench's database pool", () => database.close());
    await migrate(database);
    await seedCatalog(database.db, englishCountryName);
    const partnerId = "5f1d3c2a-8b4e-4c6d-9e7f-0a1b2c3d4e5f";
    const { publicKeyPem } = generateKeyPair();
    await sql`INSERT INTO partners (id, name, public_key_pem, allowed_ips)
              VALUES (${partnerId}, 'Bench Partner', ${publicKeyPem}, '{127.0.0.1/32}')`.execute(database.db);
    const ids: number[] = [];
    for (let n = 1; n <= clientCount; n++) ids.push((await insertClient(database.db, partnerId, n)).id);
    const firstClientId = ids[0]!;
    if (ids.some((id, i) => id !== firstClientId + i)) throw new Error("client ids are not consecutive");

    const hz = clockTicksPerSecond();
    const rows: string[][] = [];
    const results: Record<string, { tps: number; pg_cpu_us_per_tx: number; failed: number }> = {};
    const notes: string[] = [];
    const record = (label: string, r: PgbenchResult) => {
      const pgUs = r.transactions > 0 ? (r.pgCpuTicks / hz / r.transactions) * 1e6 : Number.NaN;
      results[label] = { tps: r.tps, pg_cpu_us_per_tx: pgUs, failed: r.failed };
      if (r.failed > 0) notes.push(`${label}: ${r.failed} failed transactions`);
      rows.push([label, fixed(r.tps, 0), fixed(pgUs, 0), String(r.failed)]);
    };

    for (const [label, text] of Object.entries(scripts(partnerId, publicKeyPem, firstClientId))) {
      const file = path.join(ctx.scratchDir, `${label.replace(/ /g, "-")}.sql`);
      fs.writeFileSync(file, `${text}\n`);
      const options = { script: file, protocol: "extended" as const };
      if (ctx.warmupS > 0) {
        await pgbenchRun(ctx.cleanup, pgbench, databaseUrl, dbName, connections, ctx.warmupS, options);
      }
      process.stdout.write(`bench: pgbench ${label}, ${ctx.durationS} s\n`);
      record(
        label,
        await pgbenchRun(ctx.cleanup, pgbench, databaseUrl, dbName, connections, ctx.durationS, options),
      );
    }
    const ledger = await checkLedger(database.db);
    if (ledger.length > 0) notes.push(`INCONSISTENT: ledger check: ${JSON.stringify(ledger.slice(0, 5))}`);
    await database.close();

    const init = await runCommand(ctx.cleanup, pgbench, ["-i", "-s", "1", "-q", databaseUrl], 300_000);
    if (init.code !== 0) throw new Error(`pgbench -i exited ${init.code}:\n${init.stdout}${init.stderr}`);
    if (ctx.warmupS > 0)
      await pgbenchRun(ctx.cleanup, pgbench, databaseUrl, dbName, connections, ctx.warmupS);
    process.stdout.write(`bench: pgbench TPC-B, ${ctx.durationS} s\n`);
    record(
      "TPC-B (prepared)",
      await pgbenchRun(ctx.cleanup, pgbench, databaseUrl, dbName, connections, ctx.durationS),
    );

    printTable(
      `a deposit's statements on PostgreSQL alone (${connections} connections, ${ctx.durationS} s each, extended protocol)`,
      ["script", "tx/s", "PG CPU µs/tx", "failed"],
      rows,
    );
    return {
      name: "deposit-sql",
      ok: notes.length === 0,
      targets: [],
      ratios: {
        three_over_nine_tps:
          (results["three statements"]?.tps ?? Number.NaN) / (results["nine statements"]?.tps ?? Number.NaN),
      },
      serverProblems: {},
      notes,
      results,
    };
  },
};
