// `npm run bench`: runs the benchmark scenarios one after another, each with its own servers in
// child processes and its own temporary directory, prints a table per scenario and writes
// bench/results/latest-<scenario>.json, then ends with one summary table of every path measured
// against the reference (bench/compare.ts), also written to bench/results/latest-summary.json.
// Exits 1 when any target got a non-2xx answer or a failed connection, 2 when a scenario could
// not run.
//
// Environment:
//   BENCH_ONLY=name[,name]  run only these scenarios
//   BENCH_DURATION_S        measured seconds per target (default 10)
//   BENCH_WARMUP_S          warm-up seconds before each measured run (default 2)
//   BENCH_CONNECTIONS       concurrent connections (default 10; the deposits scenario uses 64 unless set)
//   BENCH_ENTRY             what the service on PostgreSQL runs: "bundle" (default, the production
//                           process, built from the tree first) or "sources" (lib.ts, ServiceEntry)
//   BENCH_SIGNATURE_VERIFIER  the service's SIGNATURE_VERIFIER (auto, libsodium or node; default:
//                           the service's own, auto); the reference always verifies with node:crypto
//   BENCH_DATABASE_URL, BENCH_WORKERS, BENCH_CLIENTS, BENCH_PGBENCH: see scenarios/deposits.ts
//   (deposit-sql, the database's side of a deposit alone and what each part of it costs, uses the
//   same, with BENCH_ROUNDS rounds, default 2, BENCH_PARTS, and BENCH_LOOP to measure in one backend)
//   BENCH_FACTS_DEPOSITS    deposits per slice of funding-facts on PostgreSQL (default 2,000, a
//                           quarter on PGlite; BENCH_ROUNDS rounds, default 4)
//   BENCH_EXECUTE_PAIRS     quote → execute pairs per slice of execute-kept on PostgreSQL (default
//                           1,000, a quarter on PGlite; BENCH_ROUNDS rounds, default 4)
//   BENCH_QUOTES            quotes per slice of quote-kept on PostgreSQL (default 2,000, a quarter
//                           on PGlite; BENCH_ROUNDS rounds, default 4)
//   BENCH_DB_DELAY_MS       funding-facts, quote-kept and execute-kept reach PostgreSQL through a link
//                           that holds each chunk this many ms each way (default 0: none), for the
//                           wall time a round trip costs across a network (bench/kept-vs-read.ts)
//   BENCH_POOL_SIZE         the pool per API process, both sides of the comparisons (default 10)
//   BENCH_STARTUP_ROUNDS    starts per target in the startup scenario (default 5)
//   BENCH_ROUNDS            interleaved rounds of the events scenario (default 3; scenarios/events.ts)
//                           and of statement-gc (default 2; scenarios/statement-gc.ts)
//   BENCH_SLICES            slices per side in the reads, deposits and trading scenarios, the sides
//                           alternated (default 5; compare.ts, measureAlternated)
//   BENCH_MEMORY_S          seconds of mixed load in the memory scenario (default 600)
//   BENCH_MEMORY_LOOPS      concurrent loops per service in the memory scenario (default 8, at most
//                           64 and at most BENCH_CLIENTS)
//
// To add a benchmark, write bench/scenarios/<name>.ts exporting a Scenario (see lib.ts) and add
// it to `scenarios` below.

import os from "node:os";
import path from "node:path";
import { type Comparison, printSummary } from "./compare.ts";
import { Cleanup, environmentInfo, type ScenarioReport, tempDir, writeResults } from "./lib.ts";
import { depositSql } from "./scenarios/deposit-sql.ts";
import { deposits } from "./scenarios/deposits.ts";
import { events } from "./scenarios/events.ts";
import { executeKept } from "./scenarios/execute-kept.ts";
import { foundation } from "./scenarios/foundation.ts";
import { fundingFacts } from "./scenarios/funding-facts.ts";
import { logging } from "./scenarios/logging.ts";
import { memory } from "./scenarios/memory.ts";
import { parse } from "./scenarios/parse.ts";
import { quoteKept } from "./scenarios/quote-kept.ts";
import { rateLimits } from "./scenarios/rate-limits.ts";
import { reads } from "./scenarios/reads.ts";
import { startup } from "./scenarios/startup.ts";
import { statementGc } from "./scenarios/statement-gc.ts";
import { statements } from "./scenarios/statements.ts";
import { trading } from "./scenarios/trading.ts";

const scenarios = [
  foundation,
  reads,
  statements,
  statementGc,
  deposits,
  depositSql,
  fundingFacts,
  trading,
  quoteKept,
  executeKept,
  events,
  parse,
  logging,
  startup,
  rateLimits,
  memory,
];

function numberFromEnv(name: string, fallback: number, min: number, max: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === "") return fallback;
  const n = Number(raw);
  if (!Number.isFinite(n) || n < min || n > max) {
    throw new Error(`${name}: expected a number from ${min} to ${max}, got "${raw}"`);
  }
  return n;
}

async function main(): Promise<number> {
  const durationS = numberFromEnv("BENCH_DURATION_S", 10, 1, 600);
  const warmupS = numberFromEnv("BENCH_WARMUP_S", 2, 0, 60);
  const connections = Math.round(numberFromEnv("BENCH_CONNECTIONS", 10, 1, 1000));
  const only = (process.env.BENCH_ONLY ?? "")
    .split(",")
    .map((s) => s.trim())
    .filter((s) => s !== "");
  const unknown = only.filter((name) => !scenarios.some((s) => s.name === name));
  if (unknown.length > 0) {
    process.stderr.write(
      `bench: unknown scenario ${unknown.join(", ")}; known: ${scenarios.map((s) => s.name).join(", ")}\n`,
    );
    return 2;
  }
  const selected = only.length > 0 ? scenarios.filter((s) => only.includes(s.name)) : scenarios;

  // Nothing may run unbounded: the whole run gets a generous budget, then everything is stopped.
  let active: Cleanup | null = null;
  const budgetS = selected.reduce((sum, s) => sum + (s.budgetS ?? 180 + 4 * (warmupS + durationS + 30)), 0);
  const watchdog = setTimeout(() => {
    process.stderr.write(`bench: still running after ${budgetS} s; stopping everything\n`);
    void (active?.run() ?? Promise.resolve()).finally(() => process.exit(3));
  }, budgetS * 1000);
  let interrupted = false;
  for (const signal of ["SIGINT", "SIGTERM"] as const) {
    process.once(signal, () => {
      interrupted = true;
      process.stderr.write(`bench: ${signal}; stopping servers\n`);
      void (active?.run() ?? Promise.resolve()).finally(() => process.exit(signal === "SIGINT" ? 130 : 143));
    });
  }

  const environment = environmentInfo();
  const comparisons: Comparison[] = [];
  const ran: string[] = [];
  let exitCode = 0;
  try {
    for (const scenario of selected) {
      process.stdout.write(`\n=== ${scenario.name}: ${scenario.description}\n`);
      const cleanup = new Cleanup();
      active = cleanup;
      const startedAt = new Date().toISOString();
      let report: ScenarioReport | null = null;
      let failure: string | null = null;
      try {
        const scratchDir = tempDir(cleanup, `counterpart-bench-${scenario.name}`);
        report = await scenario.run({ cleanup, scratchDir, durationS, warmupS, connections });
      } catch (err) {
        failure = err instanceof Error ? (err.stack ?? err.message) : String(err);
      } finally {
        await cleanup.run();
        active = null;
      }
      // Interrupted: the signal handler stops the servers and exits; keep the last results file.
      if (interrupted) break;

      ran.push(scenario.name);
      if (report !== null) {
        if (Array.isArray(report.comparisons)) comparisons.push(...(report.comparisons as Comparison[]));
        for (const [server, lines] of Object.entries(report.serverProblems)) {
          if (lines.length === 0) continue;
          process.stdout.write(`\n${server} logged ${lines.length} warning/error line(s); first ones:\n`);
          for (const line of lines.slice(0, 10)) process.stdout.write(`  ${line.slice(0, 400)}\n`);
        }
        for (const note of report.notes) process.stdout.write(`note: ${note}\n`);
      }
      const file = writeResults(scenario.name, {
        scenario: scenario.name,
        description: scenario.description,
        started_at: startedAt,
        finished_at: new Date().toISOString(),
        settings: { duration_s: durationS, warmup_s: warmupS, connections },
        environment: { ...environment, loadavg_at_end: os.loadavg() },
        ok: report?.ok === true && failure === null,
        failure,
        report,
      });
      process.stdout.write(`\nresults: ${path.relative(process.cwd(), file)}\n`);

      if (failure !== null) {
        process.stderr.write(`\nbench: FAILED ${scenario.name}:\n${failure}\n`);
        exitCode = Math.max(exitCode, 2);
      } else if (report !== null && !report.ok) {
        const bad = report.targets.filter((t) => !t.ok);
        process.stderr.write(`\nbench: FLAGGED ${scenario.name}: figures are not valid\n`);
        for (const t of bad) {
          process.stderr.write(
            `  ${t.label}: ${t.non2xx} non-2xx and ${t.errors} errors in the measured run, ` +
              `${t.warmup.non2xx} non-2xx and ${t.warmup.errors} errors in the warm-up; ` +
              `status codes ${JSON.stringify(t.statusCodes)}` +
              (t.firstNon2xx ? `; first non-2xx: ${t.firstNon2xx.status} ${t.firstNon2xx.body}` : "") +
              "\n",
          );
        }
        exitCode = Math.max(exitCode, 1);
      }
    }
    if (comparisons.length > 0) {
      printSummary(comparisons);
      const load = (l: number[]) => l.map((x) => x.toFixed(1)).join(" ");
      process.stdout.write(
        `\nmachine: ${environment.cpu_model}, ${environment.cpus} cores; load average ${load(environment.loadavg_at_start as number[])} at the start, ${load(os.loadavg())} at the end; ${durationS} s per side, ${warmupS} s warm-up\n`,
      );
      const file = writeResults("summary", {
        finished_at: new Date().toISOString(),
        settings: { duration_s: durationS, warmup_s: warmupS },
        environment: { ...environment, loadavg_at_end: os.loadavg() },
        scenarios: ran,
        comparisons,
      });
      process.stdout.write(`\nsummary: ${path.relative(process.cwd(), file)}\n`);
    }
  } finally {
    clearTimeout(watchdog);
  }
  return exitCode;
}

process.exitCode = await main().catch((err: unknown) => {
  process.stderr.write(`bench: ${err instanceof Error ? err.message : String(err)}\n`);
  return 2;
});
