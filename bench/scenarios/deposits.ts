// Issue "Concurrency on PostgreSQL", benchmark part: signed POST /v1/partner/deposits on a local
// PostgreSQL server (64 connections, every request with its own partner_order_ref and a fresh
// signature), then, in the same run and against the same database, pgbench's TPC-B workload
// (`pgbench -c 64 -j 2 -M prepared`, scale 1). Prints both and the ratio deposits/s ÷ pgbench tps
// (target ≥ 0.5): the service's whole transaction against what the database alone does with a
// comparable hot-row write transaction.
//
// Environment (besides run.ts's):
//   BENCH_DATABASE_URL  server to create the database on (default postgres://postgres@127.0.0.1:5432/postgres)
//   BENCH_WORKERS       API processes of the service (WORKERS; default 2)
//   BENCH_CLIENTS       verified clients the deposits are spread over (default 64)
//   BENCH_PGBENCH       the pgbench binary (default: on PATH, else /usr/lib/postgresql/*/bin/pgbench)
//   BENCH_CONNECTIONS   when set, replaces the 64 connections of both loads
//
// The service's CPU is that of its whole process tree (primary and workers); PostgreSQL's is that
// of the backends serving this database (sampled from /proc by their process titles).

import crypto from "node:crypto";
import path from "node:path";
import { generateKeyPair } from "@counterpart/protocol";
import { sql } from "kysely";
import { type Db, openDatabase } from "../../packages/server/src/db/database.ts";
import { checkLedger } from "../../packages/server/src/modules/ledger/ledger-store.ts";
import { insertClient } from "../../packages/server/src/testing/fixtures.ts";
import {
  clockTicksPerSecond,
  fetchOnce,
  fixed,
  hostBusyTicks,
  loadNotes,
  measureTarget,
  type Partner,
  printTable,
  type RequestSpec,
  runLoad,
  type Scenario,
  type ScenarioReport,
  sleep,
  startService,
  stopChild,
  type TargetResult,
} from "../lib.ts";
import { findPgbench, pgbenchRun, runCommand } from "../pgbench.ts";
import { backendsOf, CpuSampler, freshBenchDatabase, intFromEnv, processTree, ticksOf } from "../proc.ts";

const adminToken = "bench-admin-token-0123456789abcdef";

// ---------------------------------------------------------------------------------------------

export const deposits: Scenario = {
  name: "deposits",
  description:
    "signed POST /v1/partner/deposits on PostgreSQL (unique references) vs pgbench TPC-B on the same database",

  async run(ctx): Promise<ScenarioReport> {
    const notes: string[] = [];
    const connections = process.env.BENCH_CONNECTIONS ? ctx.connections : 64;
    const workers = intFromEnv("BENCH_WORKERS", 2, 1, 64);
    const clientCount = intFromEnv("BENCH_CLIENTS", 64, 1, 100_000);
    const pgbench = findPgbench();
    const { dbName, databaseUrl } = await freshBenchDatabase(ctx.cleanup);
    process.stdout.write(`bench: database ${dbName}; pgbench ${pgbench}\n`);

    const service = await startService(ctx.cleanup, {
      dataDir: path.join(ctx.scratchDir, "data"),
      env: { DATABASE_URL: databaseUrl, WORKERS: String(workers), ADMIN_TOKEN: adminToken },
    });
    if (service.adminUrl === null) throw new Error("the service runs no admin API");

    // A partner through the admin API, clients straight into the database.
    const keys = generateKeyPair();
    const created = await fetch(`${service.adminUrl}/admin/partners`, {
      method: "POST",
      headers: { authorization: `Bearer ${adminToken}`, "content-type": "application/json" },
      body: JSON.stringify({
        name: "Bench Partner",
        public_key_pem: keys.publicKeyPem,
        allowed_ips: ["127.0.0.1/32", "::1/128"],
      }),
      signal: AbortSignal.timeout(10_000),
    });
    const createdText = await created.text();
    if (created.status !== 201) throw new Error(`partner create answered ${created.status}: ${createdText}`);
    const partner: Partner = {
      partnerId: (JSON.parse(createdText) as { result: { id: string } }).result.id,
      privateKey: crypto.createPrivateKey(keys.privateKeyPem),
    };
    const database = await openDatabase({ databaseUrl, pgliteDir: null, poolSize: 2 });
    ctx.cleanup.add("close the bench's database pool", () => database.close());
    for (let n = 1; n <= clientCount; n++) await insertClient(database.db, partner.partnerId, n);

    // Every request: the next client in turn, a reference never used before, signed when sent.
    const runId = crypto.randomBytes(4).toString("hex");
    let sent = 0;
    const depositBody = () => {
      const n = sent++;
      return JSON.stringify({
        partner_client_id: `client-${1 + (n % clientCount)}`,
        asset_id: "AED",
        amount: "1.00",
        partner_order_ref: `bench-${runId}-${n}`,
      });
    };
    const request: RequestSpec = {
      method: "POST",
      path: "/v1/partner/deposits",
      headers: { "content-type": "application/json" },
      body: depositBody,
    };
    const probe = await fetchOnce(service.partnerUrl, request, partner);
    if (probe.status !== 200) {
      throw new Error(`signed deposit answered ${probe.status}: ${probe.body.toString().slice(0, 300)}`);
    }

    // The warm-up runs here rather than inside measureTarget, so that the CPU of the service's
    // whole process tree and of the database backends can be read around the measured run alone.
    const load = { url: service.partnerUrl, request, partner, connections, durationS: ctx.durationS };
    process.stdout.write(`bench: deposits: warm-up ${ctx.warmupS} s with ${connections} connections\n`);
    const warm = ctx.warmupS > 0 ? await runLoad({ ...load, durationS: ctx.warmupS }) : null;
    const serverPids = processTree(service.child.pid);
    const pgSampler = new CpuSampler(() => backendsOf(dbName));
    const statsBefore = await databaseStats(database.db, dbName);
    const hostBefore = hostBusyTicks();
    const treeBefore = ticksOf(serverPids);
    pgSampler.start();
    const measured = await measureTarget({
      label: "signed deposits",
      serverPid: service.child.pid,
      warmupS: 0,
      load,
    });
    const pgCpu = pgSampler.stop();
    const treeAfter = ticksOf(serverPids);
    const hostTicks = hostBusyTicks() - hostBefore;
    const statsAfter = await databaseStats(database.db, dbName);
    if (treeAfter.size !== treeBefore.size) notes.push("a service process exited during the measured run");
    let treeTicks = 0;
    for (const [pid, t] of treeAfter) treeTicks += t - (treeBefore.get(pid) ?? t);

    // measureTarget saw the primary process only, and no warm-up: correct both.
    const hz = clockTicksPerSecond();
    const wallMs = measured.durationS * 1000;
    const target: TargetResult = {
      ...measured,
      serverCpuTicks: treeTicks,
      serverCpuUsPerRequest: measured.requests > 0 ? (treeTicks / hz / measured.requests) * 1e6 : Number.NaN,
      serverCpuPercent: ((treeTicks / hz) * 1e5) / wallMs,
      otherCpuPercent: Math.max(
        0,
        (((hostTicks - treeTicks - pgCpu.ticks) / hz) * 1e5) / wallMs - measured.clientCpuPercent,
      ),
      firstNon2xx: measured.firstNon2xx ?? warm?.firstNon2xx ?? null,
      warmup: {
        durationS: ctx.warmupS,
        requests: warm?.result.requests.total ?? 0,
        non2xx: warm?.result.non2xx ?? 0,
        errors: warm?.result.errors ?? 0,
      },
    };
    target.ok = target.ok && target.warmup.non2xx === 0 && target.warmup.errors === 0;
    const pgCpuUsPerDeposit =
      measured.requests > 0 ? (pgCpu.ticks / hz / measured.requests) * 1e6 : Number.NaN;
    const perDeposit = (k: keyof DatabaseStats) =>
      measured.requests > 0 ? (statsAfter[k] - statsBefore[k]) / measured.requests : Number.NaN;

    // Every 200 is one order, and the ledger balances. autocannon stops counting when its time is
    // up, while the requests then in flight (at most one per connection and run) still complete.
    const warmCodes = (warm?.result.statusCodeStats ?? {}) as Record<string, { count: number } | undefined>;
    const answered200 = 1 + (warmCodes["200"]?.count ?? 0) + (measured.statusCodes["200"] ?? 0);
    const inFlightMax = (warm === null ? 1 : 2) * connections;
    const orders = Number(
      (await sql<{ n: string }>`SELECT count(*)::text AS n FROM orders`.execute(database.db)).rows[0]?.n,
    );
    const ledger = await checkLedger(database.db);
    const consistent =
      orders >= answered200 && orders <= answered200 + inFlightMax && orders <= sent && ledger.length === 0;
    if (!consistent) {
      notes.push(
        `INCONSISTENT: ${answered200} deposits answered 200 (${sent} sent) but ${orders} orders exist; ` +
          `ledger check: ${JSON.stringify(ledger.slice(0, 5))}`,
      );
    }
    await database.close();

    // The service goes before pgbench: pgbench gets the machine (and the connection slots) alone.
    await stopChild(service.child);

    process.stdout.write("bench: pgbench -i -s 1\n");
    const init = await runCommand(ctx.cleanup, pgbench, ["-i", "-s", "1", "-q", databaseUrl], 300_000);
    if (init.code !== 0) throw new Error(`pgbench -i exited ${init.code}:\n${init.stdout}${init.stderr}`);
    if (ctx.warmupS > 0) {
      process.stdout.write(`bench: pgbench: warm-up ${ctx.warmupS} s\n`);
      await pgbenchRun(ctx.cleanup, pgbench, databaseUrl, dbName, connections, ctx.warmupS);
    }
    process.stdout.write(
      `bench: pgbench -c ${connections} -j ${Math.min(2, connections)} -T ${ctx.durationS} -M prepared (TPC-B, scale 1)\n`,
    );
    const tpcb = await pgbenchRun(ctx.cleanup, pgbench, databaseUrl, dbName, connections, ctx.durationS);
    const pgbenchOk = tpcb.failed === 0 && Number.isFinite(tpcb.transactions) && tpcb.transactions > 0;
    if (!pgbenchOk) notes.push(`pgbench: ${tpcb.failed} failed transactions of ${tpcb.transactions}`);
    const tpcbWallMs = tpcb.wallMs;
    const tpcbPgCpuUs = tpcb.transactions > 0 ? (tpcb.pgCpuTicks / hz / tpcb.transactions) * 1e6 : Number.NaN;
    const tpcbOtherPercent = Math.max(
      0,
      (((tpcb.hostBusyTicks - tpcb.pgCpuTicks - tpcb.pgbenchCpuTicks) / hz) * 1e5) / tpcbWallMs,
    );

    const ratio = target.reqPerSecMean / tpcb.tps;
    const targetMet = ratio >= 0.5;
    printTable(
      `deposits vs pgbench TPC-B (${connections} connections, ${ctx.durationS} s each, ${ctx.warmupS} s warm-up, ${workers} API process${workers > 1 ? "es" : ""})`,
      [
        "target",
        "tx/s",
        "p50 ms",
        "p99 ms",
        "srv CPU µs/tx",
        "srv CPU %",
        "PG CPU µs/tx",
        "PG CPU %",
        "load gen CPU %",
        "other CPU %",
        "non-2xx",
        "errors",
      ],
      [
        [
          "signed deposits",
          fixed(target.reqPerSecMean, 0),
          fixed(target.latencyMs.p50, 2),
          fixed(target.latencyMs.p99, 2),
          fixed(target.serverCpuUsPerRequest, 0),
          fixed(target.serverCpuPercent, 0),
          fixed(pgCpuUsPerDeposit, 0),
          fixed(((pgCpu.ticks / hz) * 1e5) / wallMs, 0),
          fixed(target.clientCpuPercent, 0),
          fixed(target.otherCpuPercent, 0),
          `${target.non2xx + target.warmup.non2xx}${target.non2xx + target.warmup.non2xx > 0 ? " !!" : ""}`,
          `${target.errors + target.warmup.errors}${target.errors + target.warmup.errors > 0 ? " !!" : ""}`,
        ],
        [
          "pgbench TPC-B",
          fixed(tpcb.tps, 0),
          tpcb.latencyAvgMs === null ? "n/a" : `avg ${fixed(tpcb.latencyAvgMs, 2)}`,
          "n/a",
          "-",
          "-",
          fixed(tpcbPgCpuUs, 0),
          fixed(((tpcb.pgCpuTicks / hz) * 1e5) / tpcbWallMs, 0),
          fixed(((tpcb.pgbenchCpuTicks / hz) * 1e5) / tpcbWallMs, 0),
          fixed(tpcbOtherPercent, 0),
          "-",
          `${tpcb.failed}${tpcb.failed > 0 ? " !!" : ""}`,
        ],
      ],
    );
    process.stdout.write(
      `\nper deposit: ${fixed(perDeposit("commits"), 2)} transactions committed, ` +
        `${fixed(perDeposit("inserted"), 2)} rows inserted, ${fixed(perDeposit("updated"), 2)} updated, ` +
        `${fixed(perDeposit("returned"), 1)} rows read (approximate, from pg_stat_database)\n` +
        `deposits/s ÷ pgbench tps    ${fixed(ratio, 3)}   (target ≥ 0.5: ${targetMet ? "met" : "NOT met"})\n`,
    );
    if (!targetMet) notes.push(`deposits/s ÷ pgbench tps = ${fixed(ratio, 3)}, below the target of 0.5`);
    notes.push(...loadNotes([target]));
    if (tpcbOtherPercent > 20) {
      notes.push(
        `pgbench: other processes used ${tpcbOtherPercent.toFixed(0)}% of a core; figures are disturbed`,
      );
    }

    return {
      name: "deposits",
      ok: target.ok && consistent && pgbenchOk,
      targets: [target],
      ratios: { deposits_per_s_over_pgbench_tps: ratio },
      // The bench stopped it on purpose; the rest is news.
      serverProblems: {
        counterpart: service.child.output.problems().filter((l) => l !== "counterpart: stopped on SIGTERM"),
      },
      notes,
      target_ratio: 0.5,
      target_met: targetMet,
      workers,
      clients: clientCount,
      database_cpu: {
        deposits_us_per_request: pgCpuUsPerDeposit,
        deposits_backends: pgCpu.processes,
        pgbench_us_per_transaction: tpcbPgCpuUs,
        pgbench_backends: tpcb.pgBackends,
      },
      database_work_per_deposit: {
        commits: perDeposit("commits"),
        rollbacks: perDeposit("rollbacks"),
        rows_inserted: perDeposit("inserted"),
        rows_updated: perDeposit("updated"),
        rows_returned: perDeposit("returned"),
      },
      consistency: { answered_200: answered200, sent, orders, ledger_differences: ledger.length },
      pgbench: {
        command: `pgbench -c ${connections} -j ${Math.min(2, connections)} -T ${ctx.durationS} -M prepared (TPC-B, scale 1)`,
        tps: tpcb.tps,
        transactions: tpcb.transactions,
        failed: tpcb.failed,
        latency_avg_ms: tpcb.latencyAvgMs,
        pgbench_cpu_percent: ((tpcb.pgbenchCpuTicks / hz) * 1e5) / tpcbWallMs,
        other_cpu_percent: tpcbOtherPercent,
        output: tpcb.output,
      },
    };
  },
};

interface DatabaseStats {
  commits: number;
  rollbacks: number;
  inserted: number;
  updated: number;
  returned: number;
}

/**
 * The bench database's counters from pg_stat_database. Backends flush them about once a second
 * while busy (an idle one may hold its last second for longer), so per-deposit figures derived
 * from them are approximate.
 */
async function databaseStats(db: Db, dbName: string): Promise<DatabaseStats> {
  // Counters are flushed by backends about once a second; wait for the last ones.
  await sleep(1_100);
  const { rows } = await sql<{ c: string; r: string; i: string; u: string; t: string }>`
    SELECT xact_commit::text AS c, xact_rollback::text AS r, tup_inserted::text AS i,
           tup_updated::text AS u, tup_returned::text AS t
    FROM pg_stat_database WHERE datname = ${dbName}
  `.execute(db);
  const r = rows[0];
  if (r === undefined) throw new Error(`no pg_stat_database row for ${dbName}`);
  return {
    commits: Number(r.c),
    rollbacks: Number(r.r),
    inserted: Number(r.i),
    updated: Number(r.u),
    returned: Number(r.t),
  };
}
