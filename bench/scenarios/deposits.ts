// Deposit throughput (docs/decisions.md "One call per order") against the reference: signed POST
// /v1/partner/deposits on a local PostgreSQL server (64 connections, every request with its own
// partner_order_ref and a fresh signature), on Counterpart and on the reference
// (bench/reference-server.ts: one transaction, the order insert and a guarded balance update)
// started on the same database; then the same for withdrawals (0.01 AED each, from what the
// deposits brought); then, against the same database with both servers stopped, pgbench's TPC-B
// workload (`pgbench -c 64 -j 2 -M prepared`, scale 1). Prints both sides and the ratios
// Counterpart ÷ reference (target ≥ 1.0 for deposits) and deposits/s ÷ pgbench tps (target ≥ 0.7):
// the service's whole transaction against what the database alone does with a comparable hot-row
// write transaction.
//
// Environment (besides run.ts's):
//   BENCH_DATABASE_URL  server to create the database on (default postgres://postgres@127.0.0.1:5432/postgres)
//   BENCH_WORKERS       API processes of the service and of the reference (WORKERS; default 2)
//   BENCH_CLIENTS       verified clients the deposits are spread over (default 64)
//   BENCH_CLIENT_PICK   `turn` (default): each request the next client in turn, so that the requests
//                       under way at once are of consecutive clients; `random`: a client drawn at
//                       random (the same draws on both sides), as a partner's many clients come
//                       (their ids, and so their house slots, then fall as chance has it)
//   BENCH_PGBENCH       the pgbench binary (default: on PATH, else /usr/lib/postgresql/*/bin/pgbench)
//   BENCH_CONNECTIONS   when set, replaces the 64 connections of every load
//   BENCH_SLICES        slices per side, the sides alternated (default 5; compare.ts,
//                       measureAlternated)
//
// The servers' CPU is that of their whole process trees (primary and workers); PostgreSQL's is that
// of the backends serving this database (sampled from /proc by their process titles).

import crypto from "node:crypto";
import { sql } from "kysely";
import type { Db } from "../../packages/server/src/db/database.ts";
import { mulberry32 } from "../../packages/server/src/faults/schedule.ts";
import { checkLedger } from "../../packages/server/src/modules/ledger/ledger-store.ts";
import {
  adminCall,
  type Comparison,
  comparison,
  measureAlternated,
  printComparisons,
  type Side,
  startPair,
} from "../compare.ts";
import {
  clockTicksPerSecond,
  fetchOnce,
  fixed,
  loadNotes,
  printTable,
  type RequestSpec,
  type Scenario,
  type ScenarioReport,
  sleep,
  stopChild,
  type TargetResult,
} from "../lib.ts";
import { findPgbench, pgbenchRun, runCommand } from "../pgbench.ts";
import { intFromEnv } from "../proc.ts";
import { referenceCounts } from "../reference-db.ts";

/** Deposits/s ÷ pgbench TPC-B tps: the target. */
const pgbenchTarget = 0.7;

export const deposits: Scenario = {
  name: "deposits",
  description:
    "signed deposits and withdrawals on PostgreSQL, Counterpart vs reference, then pgbench TPC-B on the same database",

  async run(ctx): Promise<ScenarioReport> {
    const notes: string[] = [];
    const connections = process.env.BENCH_CONNECTIONS ? ctx.connections : 64;
    const slices = intFromEnv("BENCH_SLICES", 5, 1, 50);
    const pgbench = findPgbench();
    const pair = await startPair(ctx, { referenceAed: "0" });
    const { dbName, databaseUrl, partner, service, reference, clientCount, workers } = pair;
    const database = pair.database;
    process.stdout.write(`bench: pgbench ${pgbench}\n`);

    // Every request: the next client in turn (or one drawn at random), a reference never used
    // before, signed when sent.
    const runId = crypto.randomBytes(4).toString("hex");
    const sent: Record<string, number> = {};
    const atRandom = clientPick() === "random";
    const funding = (kind: "deposits" | "withdrawals", who: string): RequestSpec => {
      const key = `${kind} ${who}`;
      sent[key] = 0;
      // The same draws for both sides: seeded by the kind alone.
      const draw = mulberry32(kind === "deposits" ? 1 : 2);
      return {
        method: "POST",
        path: `/v1/partner/${kind}`,
        headers: { "content-type": "application/json" },
        body: () => {
          const n = (sent[key] ?? 0) + 1;
          sent[key] = n;
          return JSON.stringify({
            partner_client_id: `client-${1 + (atRandom ? draw.int(clientCount) : n % clientCount)}`,
            asset_id: "AED",
            amount: kind === "deposits" ? "1.00" : "0.01",
            partner_order_ref: `bench-${runId}-${who}-${kind}-${n}`,
          });
        },
      };
    };
    const servers = [
      { who: "Counterpart", url: service.partnerUrl, pid: service.child.pid },
      { who: "reference", url: reference.url, pid: reference.child.pid },
    ] as const;

    const targets: TargetResult[] = [];
    const sides: Record<string, Side> = {};
    // What the database did for Counterpart's deposits alone: its counters read around each of
    // their slices (the reference's slices, on the same database, fall between them).
    const depositStats: DatabaseStats = { commits: 0, rollbacks: 0, inserted: 0, updated: 0, returned: 0 };
    let counterpartDeposits: TargetResult | null = null;
    for (const kind of ["deposits", "withdrawals"] as const) {
      const requests = servers.map((s) => funding(kind, s.who));
      for (const [i, s] of servers.entries()) {
        const probe = await fetchOnce(s.url, requests[i]!, partner);
        if (probe.status !== 200) {
          throw new Error(
            `${s.who}: a signed ${kind.slice(0, -1)} answered ${probe.status}: ${probe.body.toString().slice(0, 300)}`,
          );
        }
      }
      const callsBefore = kind === "deposits" ? await fundingCalls(pair.adminUrl) : null;
      let sliceBefore: DatabaseStats | null = null;
      const m = await measureAlternated({
        dbName,
        warmupS: ctx.warmupS,
        durationS: ctx.durationS,
        rounds: slices,
        sides: servers.map((s, i) => ({
          label: `${kind} (${s.who})`,
          rootPid: s.pid,
          load: { url: s.url, request: requests[i]!, partner, connections, durationS: ctx.durationS },
          ...(kind === "deposits" && s.who === "Counterpart"
            ? {
                around: {
                  async before() {
                    sliceBefore = await databaseStats(database.db, dbName);
                  },
                  async after() {
                    const after = await databaseStats(database.db, dbName);
                    for (const k of Object.keys(depositStats) as (keyof DatabaseStats)[])
                      depositStats[k] += after[k] - (sliceBefore?.[k] ?? Number.NaN);
                  },
                },
              }
            : {}),
        })),
      });
      notes.push(...m.notes);
      for (const [i, s] of servers.entries()) {
        const measured = m.measured[i]!;
        targets.push(measured.target);
        sides[`${kind} ${s.who}`] = measured.side;
        if (kind === "deposits" && s.who === "Counterpart") counterpartDeposits = measured.target;
      }
      if (callsBefore !== null) {
        const after = await fundingCalls(pair.adminUrl);
        const d = (k: keyof FundingCalls) => after[k] - callsBefore[k];
        notes.push(
          `Counterpart's deposits, warm-up included: ${d("orders")} in ${d("calls")} statements ` +
            `(${fixed(d("orders") / d("calls"), 2)} a statement); judged by the facts their process kept: ` +
            `${d("kept")}, read: ${d("read")} (a client's first in a process), kept but changed: ${d("changed")}`,
        );
      }
    }
    if (counterpartDeposits === null) throw new Error("unreachable");
    const measured = counterpartDeposits;
    const perDeposit = (k: keyof DatabaseStats) =>
      measured.requests > 0 ? depositStats[k] / measured.requests : Number.NaN;

    // Every 200 is one order, on both sides, and the service's ledger balances. autocannon stops
    // counting when its time is up, while the requests then in flight (at most one per connection
    // and run, warm-up included) still complete.
    const answered = (label: string) => {
      const t = targets.find((x) => x.label === label);
      return 1 + (t?.statusCodes["200"] ?? 0) + (t?.warmup.requests ?? 0);
    };
    const inFlightMax = (slices + (ctx.warmupS > 0 ? 1 : 0)) * connections;
    const { rows: orderRows } = await sql<{ type: string; n: string }>`
      SELECT type, count(*)::text AS n FROM orders GROUP BY type`.execute(database.db);
    const orders = Object.fromEntries(orderRows.map((r) => [r.type, Number(r.n)]));
    const refOrders = await referenceCounts(pair.pgClient);
    const ledger = await checkLedger(database.db);
    const within = (n: number | undefined, label: string) =>
      n !== undefined && n >= answered(label) && n <= answered(label) + inFlightMax;
    const consistent =
      within(orders.deposit, "deposits (Counterpart)") &&
      within(orders.withdrawal, "withdrawals (Counterpart)") &&
      within(refOrders.deposit, "deposits (reference)") &&
      within(refOrders.withdrawal, "withdrawals (reference)") &&
      ledger.length === 0;
    if (!consistent) {
      notes.push(
        `INCONSISTENT: answered 200 ${JSON.stringify(Object.fromEntries(targets.map((t) => [t.label, answered(t.label)])))} ` +
          `(sent ${JSON.stringify(sent)}); orders ${JSON.stringify(orders)}, reference orders ${JSON.stringify(refOrders)}; ` +
          `ledger check: ${JSON.stringify(ledger.slice(0, 5))}`,
      );
    }
    await database.close();

    // The servers go before pgbench: pgbench gets the machine (and the connection slots) alone.
    await stopChild(service.child);
    await stopChild(reference.child);

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
    const hz = clockTicksPerSecond();
    const tpcbWallMs = tpcb.wallMs;
    const tpcbPgCpuUs = tpcb.transactions > 0 ? (tpcb.pgCpuTicks / hz / tpcb.transactions) * 1e6 : Number.NaN;
    const tpcbOtherPercent = Math.max(
      0,
      (((tpcb.hostBusyTicks - tpcb.pgCpuTicks - tpcb.pgbenchCpuTicks) / hz) * 1e5) / tpcbWallMs,
    );

    const side = (key: string): Side => {
      const s = sides[key];
      if (s === undefined) throw new Error(`no figures for ${key}`);
      return s;
    };
    const ratio = side("deposits Counterpart").opsPerS / tpcb.tps;
    const targetMet = ratio >= pgbenchTarget;
    const base = { scenario: "deposits", unit: "request", connections, durationS: ctx.durationS };
    const comparisons: Comparison[] = [
      comparison(
        {
          ...base,
          path: "signed deposits",
          target: 1.0,
          also: [{ label: "deposits ÷ pgbench TPC-B", ratio, target: pgbenchTarget }],
        },
        side("deposits Counterpart"),
        side("deposits reference"),
      ),
      comparison(
        { ...base, path: "signed withdrawals", target: null },
        side("withdrawals Counterpart"),
        side("withdrawals reference"),
      ),
    ];
    const title = `(${connections} connections, ${ctx.durationS} s each in ${slices} alternated slices, ${ctx.warmupS} s warm-up, ${workers} processes per server)`;
    printComparisons(`deposits and withdrawals ${title}`, comparisons);
    printTable(
      `pgbench TPC-B on the same database ${title}`,
      ["target", "tx/s", "latency ms", "PG CPU µs/tx", "PG CPU %", "pgbench CPU %", "other CPU %", "failed"],
      [
        [
          "pgbench TPC-B",
          fixed(tpcb.tps, 0),
          tpcb.latencyAvgMs === null ? "n/a" : `avg ${fixed(tpcb.latencyAvgMs, 2)}`,
          fixed(tpcbPgCpuUs, 0),
          fixed(((tpcb.pgCpuTicks / hz) * 1e5) / tpcbWallMs, 0),
          fixed(((tpcb.pgbenchCpuTicks / hz) * 1e5) / tpcbWallMs, 0),
          fixed(tpcbOtherPercent, 0),
          `${tpcb.failed}${tpcb.failed > 0 ? " !!" : ""}`,
        ],
      ],
    );
    process.stdout.write(
      `\nper Counterpart deposit: ${fixed(perDeposit("commits"), 2)} transactions committed, ` +
        `${fixed(perDeposit("inserted"), 2)} rows inserted, ${fixed(perDeposit("updated"), 2)} updated, ` +
        `${fixed(perDeposit("returned"), 1)} rows read (approximate, from pg_stat_database)\n` +
        `deposits/s ÷ pgbench tps    ${fixed(ratio, 3)}   (target ≥ ${pgbenchTarget}: ${targetMet ? "met" : "NOT met"})\n`,
    );
    if (!targetMet)
      notes.push(`deposits/s ÷ pgbench tps = ${fixed(ratio, 3)}, below the target of ${pgbenchTarget}`);
    notes.push(...loadNotes(targets));
    if (tpcbOtherPercent > 20) {
      notes.push(
        `pgbench: other processes used ${tpcbOtherPercent.toFixed(0)}% of a core; figures are disturbed`,
      );
    }

    return {
      name: "deposits",
      ok: targets.every((t) => t.ok) && consistent && pgbenchOk,
      targets,
      ratios: {
        deposits_per_s_over_pgbench_tps: ratio,
        ...Object.fromEntries(comparisons.map((c) => [c.path, c.ratio])),
      },
      // The bench stopped them on purpose; the rest is news.
      serverProblems: {
        counterpart: service.child.output.problems().filter((l) => l !== "counterpart: stopped on SIGTERM"),
        reference: reference.child.output.problems(),
      },
      notes,
      comparisons,
      target_ratio: pgbenchTarget,
      target_met: targetMet,
      workers,
      clients: clientCount,
      database_cpu: {
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
      consistency: {
        answered_200: Object.fromEntries(targets.map((t) => [t.label, answered(t.label)])),
        sent,
        orders,
        reference_orders: refOrders,
        ledger_differences: ledger.length,
      },
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

/** BENCH_CLIENT_PICK: `turn` (the default) or `random`. */
function clientPick(): "turn" | "random" {
  const given = process.env.BENCH_CLIENT_PICK ?? "turn";
  if (given !== "turn" && given !== "random")
    throw new Error(`BENCH_CLIENT_PICK: turn or random, not ${given}`);
  return given;
}

interface FundingCalls {
  /** Deposits and withdrawals made by the calls (`counterpart_orders_per_call{use="funding"}`). */
  orders: number;
  calls: number;
  /** Deposits judged by the facts their process kept, read, or kept but changed. */
  kept: number;
  read: number;
  changed: number;
}

/** The service's funding calls and how its deposits were judged so far, summed over its processes. */
async function fundingCalls(adminUrl: string): Promise<FundingCalls> {
  const { body } = await adminCall(adminUrl, "GET", "/metrics");
  const value = (pattern: string) =>
    Number(new RegExp(`^${pattern} (\\d+)$`, "m").exec(body)?.[1] ?? Number.NaN);
  const judged = (outcome: string) =>
    value(`counterpart_kept_facts_total\\{use="deposit",outcome="${outcome}"\\}`);
  return {
    orders: value('counterpart_orders_per_call_sum\\{use="funding"\\}'),
    calls: value('counterpart_orders_per_call_count\\{use="funding"\\}'),
    kept: judged("kept"),
    read: judged("read"),
    changed: judged("changed"),
  };
}
