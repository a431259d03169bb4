// Counterpart against the reference (bench/reference-server.ts) in one run: both started on one
// fresh database of the local PostgreSQL, the service with 2 API processes and the reference with
// as many, each loaded in turn with the same connections and duration. For each side: throughput,
// p50/p99, the CPU of the server's whole process tree per operation and the CPU of the database's
// backends per operation (both from /proc), and the ratio Counterpart ÷ reference.

import crypto from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import { createHistogram, type RecordableHistogram } from "node:perf_hooks";
import { generateKeyPair } from "@counterpart/protocol";
import pg from "pg";
import { type DatabaseHandle, openDatabase } from "../packages/server/src/db/database.ts";
import { insertClient } from "../packages/server/src/testing/fixtures.ts";
import {
  type Child,
  clockTicksPerSecond,
  fixed,
  hostBusyTicks,
  type LoadOptions,
  measureTarget,
  type Partner,
  postgresEntry,
  printTable,
  runLoad,
  type ScenarioContext,
  type Service,
  startPortReporter,
  startService,
  type TargetResult,
} from "./lib.ts";
import { backendsOf, CpuSampler, freshBenchDatabase, intFromEnv, processTree } from "./proc.ts";
import { prepareReferenceTables } from "./reference-db.ts";

export const adminToken = "bench-admin-token-0123456789abcdef";
/**
 * The pool per process given to both sides: the service's default (DATABASE_POOL_SIZE, 10), or
 * BENCH_POOL_SIZE.
 */
const poolSize = intFromEnv("BENCH_POOL_SIZE", 10, 1, 200);

/** The library the reference verifies signatures with: BENCH_REFERENCE_VERIFIER, default node. */
function referenceVerifier(): "node" | "libsodium" {
  const raw = process.env.BENCH_REFERENCE_VERIFIER || "node";
  if (raw !== "node" && raw !== "libsodium")
    throw new Error(`BENCH_REFERENCE_VERIFIER must be node or libsodium, not ${JSON.stringify(raw)}`);
  return raw;
}

// ---------------------------------------------------------------------------------------------
// Both servers on one database

export interface Pair {
  dbName: string;
  databaseUrl: string;
  service: Service;
  adminUrl: string;
  reference: { child: Child; url: string };
  partner: Partner;
  /** The service's database through its own handle (Kysely), for setup and checks. */
  database: DatabaseHandle;
  /** A plain connection for the reference's tables. */
  pgClient: pg.Client;
  workers: number;
  clientCount: number;
}

/**
 * A fresh database, the service on it (BENCH_WORKERS API processes, default 2), a partner made
 * through the admin API, BENCH_CLIENTS verified clients (default 64) straight into the database,
 * the reference's tables with a balance row per client and asset (`referenceAed` of AED), and the
 * reference server with as many processes as the service.
 */
export async function startPair(ctx: ScenarioContext, options: { referenceAed: string }): Promise<Pair> {
  const workers = intFromEnv("BENCH_WORKERS", 2, 1, 64);
  const clientCount = intFromEnv("BENCH_CLIENTS", 64, 1, 100_000);
  const { dbName, databaseUrl } = await freshBenchDatabase(ctx.cleanup);
  process.stdout.write(`bench: database ${dbName}\n`);
  const service = await startService(ctx.cleanup, {
    dataDir: path.join(ctx.scratchDir, "data"),
    entry: postgresEntry(),
    env: {
      DATABASE_URL: databaseUrl,
      WORKERS: String(workers),
      ADMIN_TOKEN: adminToken,
      DATABASE_POOL_SIZE: String(poolSize),
    },
  });
  const adminUrl = service.adminUrl;
  if (adminUrl === null) throw new Error("the service runs no admin API");

  const keys = generateKeyPair();
  const created = await adminCall(adminUrl, "POST", "/admin/partners", {
    name: "Bench Partner",
    public_key_pem: keys.publicKeyPem,
    allowed_ips: ["127.0.0.1/32", "::1/128"],
  });
  if (created.status !== 201) throw new Error(`partner create answered ${created.status}: ${created.body}`);
  const partner: Partner = {
    partnerId: (JSON.parse(created.body) as { result: { id: string } }).result.id,
    privateKey: crypto.createPrivateKey(keys.privateKeyPem),
  };
  // Rate limits stay on (their cost is part of what is measured), with budgets far above the load.
  const budgets = await adminCall(adminUrl, "PUT", `/admin/partners/${partner.partnerId}/limits`, {
    reads: 10_000_000,
    writes: 10_000_000,
    quotes: 10_000_000,
  });
  if (budgets.status !== 200) throw new Error(`partner limits answered ${budgets.status}: ${budgets.body}`);
  const database = await openDatabase({ databaseUrl, pgliteDir: null, poolSize: 2 });
  ctx.cleanup.add("close the bench's database pool", () => database.close());
  for (let n = 1; n <= clientCount; n++) await insertClient(database.db, partner.partnerId, n);

  const pgClient = new pg.Client({ connectionString: databaseUrl });
  await pgClient.connect();
  ctx.cleanup.add("close the bench's database connection", () => pgClient.end());
  await prepareReferenceTables(pgClient, partner.partnerId, options.referenceAed);

  const configFile = path.join(ctx.scratchDir, "reference.json");
  fs.writeFileSync(
    configFile,
    JSON.stringify({
      databaseUrl,
      partnerId: partner.partnerId,
      publicKeyPem: keys.publicKeyPem,
      workers,
      poolSize,
      // The level startService gives the service.
      logLevel: "warn",
      // node:crypto, as the reference verifies, unless BENCH_REFERENCE_VERIFIER=libsodium.
      verifier: referenceVerifier(),
    }),
  );
  const reference = await startPortReporter(ctx.cleanup, "reference", [
    path.join("bench", "reference-server.ts"),
    configFile,
  ]);
  process.stdout.write(
    `bench: Counterpart ${service.partnerUrl} (pid ${service.child.pid}), reference ${reference.url} (pid ${reference.child.pid}), ${workers} processes each\n`,
  );
  return {
    dbName,
    databaseUrl,
    service,
    adminUrl,
    reference,
    partner,
    database,
    pgClient,
    workers,
    clientCount,
  };
}

export async function adminCall(
  adminUrl: string,
  method: string,
  url: string,
  body?: unknown,
): Promise<{ status: number; body: string }> {
  const res = await fetch(`${adminUrl}${url}`, {
    method,
    headers: {
      authorization: `Bearer ${adminToken}`,
      ...(body === undefined ? {} : { "content-type": "application/json" }),
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    signal: AbortSignal.timeout(10_000),
  });
  return { status: res.status, body: await res.text() };
}

// ---------------------------------------------------------------------------------------------
// One side's figures

export interface Side {
  ops: number;
  opsPerS: number;
  p50Ms: number;
  p99Ms: number;
  /** CPU of the server's whole process tree per operation. */
  serverCpuUsPerOp: number;
  serverCpuPercent: number;
  /** CPU of the database's backends per operation. */
  pgCpuUsPerOp: number;
  pgCpuPercent: number;
  /** The bench process (load generator). */
  benchCpuPercent: number;
  /** Everything else on the host during the run. */
  otherCpuPercent: number;
  non2xx: number;
  errors: number;
  ok: boolean;
}

export interface Comparison {
  scenario: string;
  path: string;
  /** What one operation is: a request, a deposit, a quote → execute pair. */
  unit: string;
  connections: number;
  durationS: number;
  counterpart: Side;
  reference: Side;
  /** Counterpart's throughput ÷ the reference's. */
  ratio: number;
  /** The target for the ratio; null when it sets none. */
  target: number | null;
  /** Other ratios with targets, e.g. deposits ÷ pgbench TPC-B. */
  also?: { label: string; ratio: number; target: number }[];
}

/** What a run cost in CPU, in clock ticks: the server's process tree, the backends, the whole host. */
export interface RunCpu {
  serverTicks: number;
  pgTicks: number;
  hostTicks: number;
  /** Processes of the server's tree that exited while the run went on. */
  serverGone: number;
}

/**
 * Runs `run` with the CPU of `rootPid`'s whole process tree and of the backends of `dbName` read
 * around it, and the host's busy time; the samplers are stopped whatever the run does.
 */
export async function withCpuSampled<T>(
  rootPid: number,
  dbName: string,
  run: () => Promise<T>,
): Promise<{ result: T; cpu: RunCpu }> {
  const serverCpu = new CpuSampler(() => processTree(rootPid));
  const pgCpu = new CpuSampler(() => backendsOf(dbName));
  const hostBefore = hostBusyTicks();
  serverCpu.start();
  pgCpu.start();
  let result: T;
  try {
    result = await run();
  } catch (err) {
    serverCpu.stop();
    pgCpu.stop();
    throw err;
  }
  const server = serverCpu.stop();
  const pg = pgCpu.stop();
  const hostTicks = hostBusyTicks() - hostBefore;
  return {
    result,
    cpu: { serverTicks: server.ticks, pgTicks: pg.ticks, hostTicks, serverGone: server.gone },
  };
}

/**
 * A run's CPU as the tables give it: µs per operation and % of one core for the server and the
 * backends, and what the rest of the host used besides them and the bench process itself.
 */
export function cpuShares(cpu: RunCpu, wallMs: number, ops: number, benchCpuPercent: number) {
  const hz = clockTicksPerSecond();
  const percent = (ticks: number) => ((ticks / hz) * 1e5) / wallMs;
  const perOp = (ticks: number) => (ops > 0 ? (ticks / hz / ops) * 1e6 : Number.NaN);
  return {
    serverCpuUsPerOp: perOp(cpu.serverTicks),
    serverCpuPercent: percent(cpu.serverTicks),
    pgCpuUsPerOp: perOp(cpu.pgTicks),
    pgCpuPercent: percent(cpu.pgTicks),
    otherCpuPercent: Math.max(0, percent(cpu.hostTicks - cpu.serverTicks - cpu.pgTicks) - benchCpuPercent),
  };
}

/**
 * A warm-up, then one measured autocannon run against `load.url` with the CPU of `rootPid`'s whole
 * process tree and of the backends of `dbName` read around the measured run alone.
 */
export async function measureLoad(options: {
  label: string;
  rootPid: number;
  dbName: string;
  load: LoadOptions;
  warmupS: number;
}): Promise<{ target: TargetResult; side: Side; notes: string[] }> {
  const { load } = options;
  const notes: string[] = [];
  process.stdout.write(
    `bench: ${options.label}: warm-up ${options.warmupS} s with ${load.connections} connections\n`,
  );
  const warm =
    options.warmupS > 0
      ? await runLoad({ ...load, durationS: options.warmupS, alsoRecord: undefined })
      : null;
  const { result: measured, cpu } = await withCpuSampled(options.rootPid, options.dbName, () =>
    measureTarget({ label: options.label, serverPid: options.rootPid, warmupS: 0, load }),
  );
  if (cpu.serverGone > 0) notes.push(`${options.label}: a server process exited during the measured run`);

  const shares = cpuShares(cpu, measured.durationS * 1000, measured.requests, measured.clientCpuPercent);
  const target: TargetResult = {
    ...measured,
    serverCpuTicks: cpu.serverTicks,
    serverCpuUsPerRequest: shares.serverCpuUsPerOp,
    serverCpuPercent: shares.serverCpuPercent,
    otherCpuPercent: shares.otherCpuPercent,
    firstNon2xx: measured.firstNon2xx ?? warm?.firstNon2xx ?? null,
    warmup: {
      durationS: options.warmupS,
      requests: warm?.result.requests.total ?? 0,
      non2xx: warm?.result.non2xx ?? 0,
      errors: warm?.result.errors ?? 0,
    },
  };
  target.ok = target.ok && target.warmup.non2xx === 0 && target.warmup.errors === 0;
  const side: Side = {
    ops: target.requests,
    opsPerS: target.reqPerSecMean,
    p50Ms: target.latencyMs.p50,
    p99Ms: target.latencyMs.p99,
    serverCpuUsPerOp: shares.serverCpuUsPerOp,
    serverCpuPercent: shares.serverCpuPercent,
    pgCpuUsPerOp: shares.pgCpuUsPerOp,
    pgCpuPercent: shares.pgCpuPercent,
    benchCpuPercent: target.clientCpuPercent,
    otherCpuPercent: shares.otherCpuPercent,
    non2xx: target.non2xx + target.warmup.non2xx,
    errors: target.errors + target.warmup.errors,
    ok: target.ok,
  };
  return { target, side, notes };
}

/**
 * One slice of an alternated side measured: a warm-up of `warmupS` first (0 after its first
 * slice), then `durationS` measured, every operation's latency also recorded in µs in `histogram`.
 */
export type SliceMeasure = (slice: {
  label: string;
  warmupS: number;
  durationS: number;
  histogram: RecordableHistogram;
}) => Promise<{ target: TargetResult; side: Side; notes: string[] }>;

/**
 * One side of measureAlternated: whose process tree and the autocannon load it gets, or a load of
 * the scenario's own (`measure`, which reads the CPU around its slice as measureLoad does).
 */
export type AlternatedSide = {
  label: string;
  /** Run just before and just after each of this side's slices (its warm-up included). */
  around?: { before(): Promise<void>; after(): Promise<void> };
} & ({ rootPid: number; load: LoadOptions } | { measure: SliceMeasure });

/**
 * Two or more sides measured on one database, their time split into `rounds` slices and the sides
 * alternated (A B, then B A, …), each slice measured as measureLoad measures a run (or by the
 * side's own `measure`). Sides measured one after the other, 10 s each, see the host in two states
 * when its speed drifts (a neighbour's load, the CPU's clock): on 7 December the same tree gave
 * balances 1.48× the reference in one run and 0.91× in the next. Alternated, a drift slower than a
 * slice weighs on every side alike.
 *
 * Each side first warms up for `warmupS`, then runs `rounds` slices of `durationS / rounds` seconds;
 * its figures are those of its slices together (operations and CPU summed, percentiles from every
 * response's time). With one round, it is measureLoad, side after side.
 */
export async function measureAlternated(options: {
  dbName: string;
  warmupS: number;
  durationS: number;
  rounds: number;
  sides: readonly AlternatedSide[];
}): Promise<{ measured: { target: TargetResult; side: Side }[]; notes: string[] }> {
  const { sides, rounds } = options;
  const sliceS = Math.max(1, Math.round(options.durationS / rounds));
  const histograms = sides.map(() => createHistogram());
  const slices: { target: TargetResult; side: Side }[][] = sides.map(() => []);
  const notes: string[] = [];
  const warmups: TargetResult["warmup"][] = [];
  for (let r = 0; r < rounds; r++) {
    const order = sides.map((_, i) => i);
    if (r % 2 === 1) order.reverse();
    for (const i of order) {
      const s = sides[i]!;
      await s.around?.before();
      const label = rounds === 1 ? s.label : `${s.label}, round ${r + 1} of ${rounds}`;
      const warmupS = r === 0 ? options.warmupS : 0;
      const m =
        "measure" in s
          ? await s.measure({ label, warmupS, durationS: sliceS, histogram: histograms[i]! })
          : await measureLoad({
              label,
              rootPid: s.rootPid,
              dbName: options.dbName,
              warmupS,
              load: { ...s.load, durationS: sliceS, alsoRecord: histograms[i] },
            });
      await s.around?.after();
      if (r === 0) warmups[i] = m.target.warmup;
      notes.push(...m.notes);
      slices[i]!.push(m);
    }
  }
  const measured = sides.map((s, i) => {
    const parts = slices[i]!;
    const histogram = histograms[i]!;
    const sum = (f: (p: { target: TargetResult; side: Side }) => number) =>
      parts.reduce((a, p) => a + f(p), 0);
    const ops = sum((p) => p.side.ops);
    const seconds = sum((p) => p.target.durationS);
    const ticks = sum((p) => p.target.serverCpuTicks);
    const ms = (us: number) => us / 1000;
    /** A percentage of one core over the slices, each weighed by its length. */
    const percent = (f: (p: { target: TargetResult; side: Side }) => number) =>
      sum((p) => f(p) * p.target.durationS) / seconds;
    const statusCodes: Record<string, number> = {};
    for (const p of parts)
      for (const [code, n] of Object.entries(p.target.statusCodes))
        statusCodes[code] = (statusCodes[code] ?? 0) + n;
    const first = parts[0]!.target;
    const latencyMs = {
      mean: ms(histogram.mean),
      p50: ms(histogram.percentile(50)),
      p90: ms(histogram.percentile(90)),
      p99: ms(histogram.percentile(99)),
      max: ms(histogram.max),
    };
    const target: TargetResult = {
      ...first,
      label: s.label,
      durationS: seconds,
      requests: ops,
      reqPerSecMean: ops / seconds,
      latencyMs,
      // autocannon's own whole-ms percentiles are per slice and do not add up: the exact ones of
      // every response stand in for them, as in the trading scenario.
      autocannonLatencyMs: { p50: latencyMs.p50, p99: latencyMs.p99, mean: latencyMs.mean },
      non2xx: sum((p) => p.target.non2xx),
      errors: sum((p) => p.target.errors),
      timeouts: sum((p) => p.target.timeouts),
      statusCodes,
      firstNon2xx: parts.find((p) => p.target.firstNon2xx !== null)?.target.firstNon2xx ?? null,
      warmup: warmups[i]!,
      serverCpuTicks: ticks,
      serverCpuUsPerRequest: ops > 0 ? (ticks / clockTicksPerSecond() / ops) * 1e6 : Number.NaN,
      serverCpuPercent: percent((p) => p.target.serverCpuPercent),
      clientCpuPercent: percent((p) => p.target.clientCpuPercent),
      otherCpuPercent: percent((p) => p.target.otherCpuPercent),
      ok: parts.every((p) => p.target.ok),
    };
    const side: Side = {
      ops,
      opsPerS: ops / seconds,
      p50Ms: latencyMs.p50,
      p99Ms: latencyMs.p99,
      serverCpuUsPerOp: target.serverCpuUsPerRequest,
      serverCpuPercent: target.serverCpuPercent,
      pgCpuUsPerOp: ops > 0 ? sum((p) => p.side.pgCpuUsPerOp * p.side.ops) / ops : Number.NaN,
      pgCpuPercent: percent((p) => p.side.pgCpuPercent),
      benchCpuPercent: target.clientCpuPercent,
      otherCpuPercent: target.otherCpuPercent,
      non2xx: sum((p) => p.side.non2xx),
      errors: sum((p) => p.side.errors),
      ok: parts.every((p) => p.side.ok),
    };
    return { target, side };
  });
  return { measured, notes };
}

// ---------------------------------------------------------------------------------------------
// Output

/** A scenario's comparisons, one row per side and a ratio line per path. */
export function printComparisons(title: string, comparisons: Comparison[]): void {
  const rows: string[][] = [];
  for (const c of comparisons) {
    for (const [who, s] of [
      ["Counterpart", c.counterpart],
      ["reference", c.reference],
    ] as const) {
      rows.push([
        `${c.path}: ${who}`,
        fixed(s.opsPerS, 0),
        fixed(s.p50Ms, 2),
        fixed(s.p99Ms, 2),
        fixed(s.serverCpuUsPerOp, 0),
        fixed(s.serverCpuPercent, 0),
        fixed(s.pgCpuUsPerOp, 0),
        fixed(s.pgCpuPercent, 0),
        fixed(s.benchCpuPercent, 0),
        fixed(s.otherCpuPercent, 0),
        `${s.non2xx}${s.non2xx > 0 ? " !!" : ""}`,
        `${s.errors}${s.errors > 0 ? " !!" : ""}`,
      ]);
    }
  }
  printTable(
    title,
    [
      "path: server",
      "ops/s",
      "p50 ms",
      "p99 ms",
      "srv CPU µs/op",
      "srv CPU %",
      "PG CPU µs/op",
      "PG CPU %",
      "bench CPU %",
      "other CPU %",
      "non-2xx",
      "errors",
    ],
    rows,
  );
  process.stdout.write("\n");
  for (const c of comparisons) {
    process.stdout.write(
      `${c.path}: Counterpart ÷ reference ${fixed(c.ratio, 2)}×` +
        (c.target === null
          ? ""
          : ` (target ≥ ${fixed(c.target, 1)}: ${c.ratio >= c.target ? "met" : "NOT met"})`) +
        `; CPU per op: server ${fixed(c.counterpart.serverCpuUsPerOp / c.reference.serverCpuUsPerOp, 2)}×, ` +
        `PostgreSQL ${fixed(c.counterpart.pgCpuUsPerOp / c.reference.pgCpuUsPerOp, 2)}×\n`,
    );
  }
}

export function comparison(
  base: Omit<Comparison, "ratio" | "counterpart" | "reference">,
  counterpart: Side,
  reference: Side,
): Comparison {
  return { ...base, counterpart, reference, ratio: counterpart.opsPerS / reference.opsPerS };
}

/** The one table `npm run bench` ends with. */
export function printSummary(comparisons: Comparison[]): void {
  const rows: string[][] = [];
  const verdict = (ratio: number, target: number | null) =>
    target === null ? "-" : !Number.isFinite(ratio) ? "n/a" : ratio >= target ? "met" : "NOT met";
  for (const c of comparisons) {
    rows.push([
      c.path,
      c.unit,
      fixed(c.counterpart.opsPerS, 0),
      fixed(c.reference.opsPerS, 0),
      `${fixed(c.ratio, 2)}×`,
      c.target === null ? "-" : `≥ ${fixed(c.target, 1)}×`,
      verdict(c.ratio, c.target),
      `${fixed(c.counterpart.p50Ms, 1)} / ${fixed(c.counterpart.p99Ms, 1)}`,
      `${fixed(c.reference.p50Ms, 1)} / ${fixed(c.reference.p99Ms, 1)}`,
      `${fixed(c.counterpart.serverCpuUsPerOp, 0)} / ${fixed(c.reference.serverCpuUsPerOp, 0)}`,
      `${fixed(c.counterpart.pgCpuUsPerOp, 0)} / ${fixed(c.reference.pgCpuUsPerOp, 0)}`,
      `${fixed(c.counterpart.otherCpuPercent, 0)} / ${fixed(c.reference.otherCpuPercent, 0)}`,
      [
        c.counterpart.ok && c.reference.ok ? "" : "!! not valid",
        Math.abs(c.counterpart.otherCpuPercent - c.reference.otherCpuPercent) > 30 ? "unequal load" : "",
      ]
        .filter((x) => x !== "")
        .join("; "),
    ]);
    for (const a of c.also ?? []) {
      rows.push([
        `  ${a.label}`,
        "",
        "",
        "",
        `${fixed(a.ratio, 2)}×`,
        `≥ ${fixed(a.target, 1)}×`,
        verdict(a.ratio, a.target),
        "",
        "",
        "",
        "",
        "",
        "",
      ]);
    }
  }
  printTable(
    "summary: Counterpart against the reference (ratio = Counterpart ops/s ÷ reference ops/s)",
    [
      "path",
      "op",
      "CP ops/s",
      "ref ops/s",
      "ratio",
      "target",
      "",
      "CP p50/p99 ms",
      "ref p50/p99 ms",
      "srv CPU µs/op CP/ref",
      "PG CPU µs/op CP/ref",
      "other CPU % CP/ref",
      "",
    ],
    rows,
  );
  process.stdout.write(
    "\nother CPU %: what the rest of the host used during each side's run, in % of one core; " +
      '"unequal load": it differed by more than 30 points between the sides, and so may the ratio\n',
  );
}
