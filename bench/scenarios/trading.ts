// Trading throughput (docs/decisions.md "One call per order") against the reference:
// quote-then-execute pairs per second on a local PostgreSQL server, on Counterpart and on the
// reference (bench/reference-server.ts: the quote is a price read and an insert; the execution one
// transaction that locks the quote, inserts the order and updates two balances) started on the same
// database. C workers (default 32) each repeat, one after the other: POST /v1/partner/quotes (a
// small BTC-AED buy for the next of N funded clients), then POST /v1/partner/quotes/execute with
// the token it returned. Every request is freshly signed. A pair counts when the execution answers
// 200 with an order in status `completed`. The two sides share the time in alternated slices
// (BENCH_SLICES, as the reads and the deposits do), so a drift of the host's speed weighs on both.
//
// Printed for both: pairs/s, p50/p99 of the pair latency (quote sent → execution answered), non-2xx
// and failed requests (any makes the run fail), the CPU of the server's whole process tree (primary
// and workers) and of the database's backends per pair, from /proc, and the ratio Counterpart ÷
// reference (target ≥ 1.0), and a note of how the service's executes were judged (by the quote
// their process kept, or read: counterpart_kept_facts_total). Afterwards the service's ledger
// check (GET /admin/ledger/check) must be clean, the buy orders in the database must be exactly
// the completed executions, and so must the reference's.
//
// Environment (besides run.ts's):
//   BENCH_DATABASE_URL  server to create the database on (default postgres://postgres@127.0.0.1:5432/postgres)
//   BENCH_WORKERS       API processes of the service and of the reference (WORKERS; default 2)
//   BENCH_CLIENTS       verified clients the trades are spread over (default 64)
//   BENCH_CONNECTIONS   when set, replaces the 32 concurrent workers
//   BENCH_SLICES        slices per side, the sides alternated (default 5; compare.ts,
//                       measureAlternated)

import http from "node:http";
import { createHistogram, type RecordableHistogram } from "node:perf_hooks";
import { formatDecimal, parseDecimal, signRequest } from "@counterpart/protocol";
import {
  type AlternatedSide,
  adminCall,
  type Comparison,
  comparison,
  cpuShares,
  measureAlternated,
  printComparisons,
  type Side,
  type SliceMeasure,
  startPair,
  withCpuSampled,
} from "../compare.ts";
import {
  loadNotes,
  type Partner,
  type Scenario,
  type ScenarioReport,
  sleep,
  type TargetResult,
  withTimeout,
} from "../lib.ts";
import { intFromEnv } from "../proc.ts";

const pair = "BTC-AED";
const price = { buy: "350000", sell: "349000" };
const baseAmount = "0.001";
/** Each client's AED: far more than a run can spend (a pair costs about 352 AED). */
const fundingPerClient = "100000000";
/** The feed is manual; the price is set again this often, well inside the 60 s staleness bound. */
const priceRefreshMs = 15_000;
const requestTimeoutMs = 10_000;

// ---------------------------------------------------------------------------------------------
// Signed requests over keep-alive connections

interface Answer {
  status: number;
  body: string;
}

export class SignedClient {
  readonly #base: URL;
  readonly #partner: Partner;
  readonly #agent: http.Agent;
  /** The last signing time per request body: identical bodies never share a millisecond. */
  readonly #lastSignedAt = new Map<string, number>();

  constructor(baseUrl: string, partner: Partner, connections: number) {
    this.#base = new URL(baseUrl);
    if (this.#base.hostname !== "127.0.0.1") throw new Error(`refusing to load ${baseUrl}: not 127.0.0.1`);
    this.#partner = partner;
    this.#agent = new http.Agent({ keepAlive: true, maxSockets: connections });
  }

  /**
   * Ed25519 is deterministic: two identical POSTs signed in one millisecond carry one signature,
   * and the second is a replay (401). A body signed in this millisecond already waits for the next.
   */
  async #signingTime(body: string): Promise<number> {
    for (;;) {
      const now = Date.now();
      const last = this.#lastSignedAt.get(body);
      if (last === undefined || now > last) {
        this.#lastSignedAt.set(body, now);
        return now;
      }
      await sleep(1);
    }
  }

  async post(target: string, payload: unknown): Promise<Answer> {
    const body = JSON.stringify(payload);
    const headers = signRequest({
      partnerId: this.#partner.partnerId,
      privateKey: this.#partner.privateKey,
      method: "POST",
      target,
      body,
      nowMs: await this.#signingTime(body),
    });
    return new Promise<Answer>((resolve, reject) => {
      const req = http.request(
        {
          host: this.#base.hostname,
          port: this.#base.port,
          method: "POST",
          path: target,
          agent: this.#agent,
          headers: {
            ...headers,
            "content-type": "application/json",
            "content-length": Buffer.byteLength(body),
          },
          timeout: requestTimeoutMs,
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on("data", (c: Buffer) => chunks.push(c));
          res.on("end", () =>
            resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString() }),
          );
          res.on("error", reject);
        },
      );
      req.on("timeout", () => req.destroy(new Error(`no answer in ${requestTimeoutMs} ms`)));
      req.on("error", reject);
      req.end(body);
    });
  }

  /** Forgets the bodies signed before `ms`: signing times never go back, so they cannot collide. */
  prune(ms: number): void {
    for (const [body, at] of this.#lastSignedAt) if (at < ms) this.#lastSignedAt.delete(body);
  }

  close(): void {
    this.#agent.destroy();
  }
}

// ---------------------------------------------------------------------------------------------
// The load

export interface LoopStats {
  /** Executions answered 200 with an order in status completed. */
  completed: number;
  /** Executions answered 200 with another status (funds ran out: not expected here). */
  otherStatus: Record<string, number>;
  /** "quote 400/3005", "execute 503/503", ...: every answer that was not a 200. */
  non2xx: Record<string, number>;
  /** Requests that got no HTTP answer (connection error, timeout). */
  errors: number;
  /** The first answer that was not a completed order (status 0: no HTTP answer), to tell why. */
  firstProblem: { status: number; body: string } | null;
  /** Pair latency in µs. */
  histogram: RecordableHistogram;
  wallMs: number;
}

function count(map: Record<string, number>, key: string): void {
  map[key] = (map[key] ?? 0) + 1;
}

const sum = (map: Record<string, number>) => Object.values(map).reduce((a, b) => a + b, 0);

/**
 * `workers` loops, each repeating quote → execute until `durationS` is up; a pair started before
 * then is finished. Clients are taken in turn from one shared counter.
 */
export async function runPairs(client: SignedClient, clients: number, workers: number, durationS: number) {
  const stats: LoopStats = {
    completed: 0,
    otherStatus: {},
    non2xx: {},
    errors: 0,
    firstProblem: null,
    histogram: createHistogram(),
    wallMs: 0,
  };
  const problem = (status: number, what: string) => {
    stats.firstProblem ??= { status, body: what.slice(0, 500) };
  };
  let next = 0;
  const started = performance.now();
  const deadline = started + durationS * 1000;
  const pruner = setInterval(() => client.prune(Date.now() - 1_000), 5_000);

  async function worker(): Promise<void> {
    while (performance.now() < deadline) {
      const pcid = `client-${1 + (next++ % clients)}`;
      const t0 = performance.now();
      let step = "quote";
      try {
        const q = await client.post("/v1/partner/quotes", {
          partner_client_id: pcid,
          asset_pair: pair,
          side: "buy",
          base_amount: baseAmount,
        });
        if (q.status !== 200) {
          count(stats.non2xx, `quote ${q.status}/${codeOf(q.body)}`);
          problem(q.status, `quote: ${q.body}`);
          continue;
        }
        const token = (JSON.parse(q.body) as { result: { token: string } }).result.token;
        step = "execute";
        const e = await client.post("/v1/partner/quotes/execute", { partner_client_id: pcid, token });
        if (e.status !== 200) {
          count(stats.non2xx, `execute ${e.status}/${codeOf(e.body)}`);
          problem(e.status, `execute: ${e.body}`);
          continue;
        }
        const status = (JSON.parse(e.body) as { result: { status: string } }).result.status;
        if (status !== "completed") {
          count(stats.otherStatus, status);
          problem(e.status, `execute answered an order in status ${status}: ${e.body}`);
          continue;
        }
        stats.completed++;
        stats.histogram.record(Math.max(1, Math.round((performance.now() - t0) * 1000)));
      } catch (err) {
        stats.errors++;
        problem(0, `${step}: ${err instanceof Error ? err.message : String(err)}`);
        // A refused connection must not turn the loop into a busy spin.
        await sleep(10);
      }
    }
  }

  try {
    await withTimeout(
      Promise.all(Array.from({ length: workers }, () => worker())),
      (durationS + 60) * 1000,
      "quote-then-execute loop",
    );
  } finally {
    clearInterval(pruner);
  }
  stats.wallMs = performance.now() - started;
  return stats;
}

function codeOf(body: string): string {
  try {
    return String((JSON.parse(body) as { code?: unknown }).code);
  } catch {
    return "?";
  }
}

// ---------------------------------------------------------------------------------------------

/**
 * One side of the trading scenario for measureAlternated: one signed client kept over its slices
 * (the signing times it remembers keep two identical quotes from sharing a millisecond even when
 * two of its slices follow each other), each slice a warm-up (its first alone), then the measured
 * loop with its process tree's and the backends' CPU read around it. `completed` counts every
 * completed execution, warm-ups included.
 */
function pairsSide(options: {
  who: string;
  url: string;
  rootPid: number;
  dbName: string;
  partner: Partner;
  clientCount: number;
  workersLoop: number;
  onCleanup: (label: string, fn: () => void) => void;
}): { side: AlternatedSide; completed: () => number } {
  const { who, workersLoop, clientCount } = options;
  const client = new SignedClient(options.url, options.partner, workersLoop);
  options.onCleanup(`close the bench's HTTP connections to ${who}`, () => client.close());
  let completed = 0;

  const measure: SliceMeasure = async ({ label, warmupS, durationS, histogram }) => {
    const notes: string[] = [];
    if (warmupS > 0) {
      process.stdout.write(`bench: ${label}: warm-up ${warmupS} s with ${workersLoop} workers\n`);
    }
    const warm = warmupS > 0 ? await runPairs(client, clientCount, workersLoop, warmupS) : null;
    completed += warm?.completed ?? 0;

    process.stdout.write(
      // The form of bench/lib.ts's measured runs (label, side, then "warm-up 0 s, then N s"), which
      // bench:perf watches for.
      `bench: ${label}: warm-up 0 s, then ${durationS} s with ${workersLoop} workers, each quote → execute in turn, over ${clientCount} clients\n`,
    );
    const selfBefore = process.cpuUsage();
    const { result: run, cpu } = await withCpuSampled(options.rootPid, options.dbName, () =>
      runPairs(client, clientCount, workersLoop, durationS),
    );
    const self = process.cpuUsage(selfBefore);
    completed += run.completed;
    histogram.add(run.histogram);
    if (cpu.serverGone > 0) notes.push(`${label}: a server process exited during the measured run`);

    const pairs = run.completed;
    const seconds = run.wallMs / 1000;
    const pairsPerS = pairs / seconds;
    const clientCpuPercent = ((self.user + self.system) / 1e3 / run.wallMs) * 100;
    const shares = cpuShares(cpu, run.wallMs, pairs, clientCpuPercent);
    const ms = (us: number) => us / 1000;
    const h = run.histogram;
    const latencyMs =
      pairs > 0
        ? {
            mean: ms(h.mean),
            p50: ms(h.percentile(50)),
            p90: ms(h.percentile(90)),
            p99: ms(h.percentile(99)),
            max: ms(h.max),
          }
        : { mean: Number.NaN, p50: Number.NaN, p90: Number.NaN, p99: Number.NaN, max: Number.NaN };
    const non2xx = sum(run.non2xx);
    const warmNon2xx = warm === null ? 0 : sum(warm.non2xx);
    const otherStatus = sum(run.otherStatus) + (warm === null ? 0 : sum(warm.otherStatus));
    const statusCodes: Record<string, number> = { "execute 200 completed": run.completed };
    for (const [k, v] of Object.entries(run.non2xx)) statusCodes[k] = v;
    for (const [k, v] of Object.entries(run.otherStatus)) statusCodes[`execute 200 ${k}`] = v;
    if (non2xx + warmNon2xx > 0) {
      notes.push(`${label}: non-2xx answers: ${JSON.stringify({ ...(warm?.non2xx ?? {}), ...run.non2xx })}`);
    }
    if (otherStatus > 0) {
      notes.push(
        `${label}: executions not completed: ${JSON.stringify({ ...(warm?.otherStatus ?? {}), ...run.otherStatus })}`,
      );
    }

    const target: TargetResult = {
      label,
      url: options.url,
      method: "POST",
      path: "/v1/partner/quotes + /v1/partner/quotes/execute",
      signed: true,
      connections: workersLoop,
      durationS: seconds,
      requests: pairs,
      reqPerSecMean: pairsPerS,
      latencyMs,
      autocannonLatencyMs: { p50: latencyMs.p50, p99: latencyMs.p99, mean: latencyMs.mean },
      non2xx,
      errors: run.errors,
      timeouts: 0,
      statusCodes,
      firstNon2xx: warm?.firstProblem ?? run.firstProblem,
      warmup: {
        durationS: warmupS,
        requests: warm?.completed ?? 0,
        non2xx: warmNon2xx,
        errors: warm?.errors ?? 0,
      },
      serverCpuTicks: cpu.serverTicks,
      serverCpuUsPerRequest: shares.serverCpuUsPerOp,
      serverCpuPercent: shares.serverCpuPercent,
      clientCpuPercent,
      otherCpuPercent: shares.otherCpuPercent,
      ok:
        pairs > 0 &&
        non2xx === 0 &&
        run.errors === 0 &&
        warmNon2xx === 0 &&
        (warm?.errors ?? 0) === 0 &&
        otherStatus === 0,
    };
    const side: Side = {
      ops: pairs,
      opsPerS: pairsPerS,
      p50Ms: latencyMs.p50,
      p99Ms: latencyMs.p99,
      serverCpuUsPerOp: shares.serverCpuUsPerOp,
      serverCpuPercent: shares.serverCpuPercent,
      pgCpuUsPerOp: shares.pgCpuUsPerOp,
      pgCpuPercent: shares.pgCpuPercent,
      benchCpuPercent: clientCpuPercent,
      otherCpuPercent: shares.otherCpuPercent,
      non2xx: non2xx + warmNon2xx,
      errors: run.errors + (warm?.errors ?? 0),
      ok: target.ok,
    };
    return { target, side, notes };
  };
  return { side: { label: `quote → execute pairs (${who})`, measure }, completed: () => completed };
}

export const trading: Scenario = {
  name: "trading",
  description: "signed quote-then-execute pairs (BTC-AED buys) on PostgreSQL, Counterpart vs reference",

  async run(ctx): Promise<ScenarioReport> {
    const notes: string[] = [];
    const workersLoop = process.env.BENCH_CONNECTIONS ? ctx.connections : 32;
    const slices = intFromEnv("BENCH_SLICES", 5, 1, 50);
    const bench = await startPair(ctx, { referenceAed: fundingPerClient });
    const { adminUrl, partner, service, reference, database, clientCount, dbName } = bench;

    const setPrice = async () => {
      const res = await adminCall(adminUrl, "PUT", `/admin/pairs/${pair}/price`, {
        ...price,
        reason: "bench set-up",
      });
      if (res.status !== 200) throw new Error(`price set answered ${res.status}: ${res.body}`);
    };
    await setPrice();

    // The service's clients are funded through its API; the reference's got theirs in its table.
    const funder = new SignedClient(service.partnerUrl, partner, 1);
    ctx.cleanup.add("close the bench's HTTP connections", () => funder.close());
    for (let n = 1; n <= clientCount; n++) {
      const res = await funder.post("/v1/partner/deposits", {
        partner_client_id: `client-${n}`,
        asset_id: "AED",
        amount: fundingPerClient,
        partner_order_ref: `bench-funding-${n}`,
      });
      if (res.status !== 200) throw new Error(`funding client-${n} answered ${res.status}: ${res.body}`);
    }
    funder.close();

    let refreshFailure: string | null = null;
    const refresher = setInterval(() => {
      setPrice().catch((err: unknown) => {
        refreshFailure ??= String(err);
      });
    }, priceRefreshMs);
    ctx.cleanup.add("stop the price refresher", () => clearInterval(refresher));

    const common = {
      dbName,
      partner,
      clientCount,
      workersLoop,
      onCleanup: (label: string, fn: () => void) => ctx.cleanup.add(label, fn),
    };
    const cpSide = pairsSide({
      ...common,
      who: "Counterpart",
      url: service.partnerUrl,
      rootPid: service.child.pid,
    });
    const refSide = pairsSide({
      ...common,
      who: "reference",
      url: reference.url,
      rootPid: reference.child.pid,
    });
    const alternated = await measureAlternated({
      dbName,
      warmupS: ctx.warmupS,
      durationS: ctx.durationS,
      rounds: slices,
      sides: [cpSide.side, refSide.side],
    });
    clearInterval(refresher);
    const [cp, ref] = alternated.measured;
    if (cp === undefined || ref === undefined) throw new Error("trading: a side was not measured");
    notes.push(...alternated.notes);
    if (refreshFailure !== null) notes.push(`a price refresh failed: ${refreshFailure}`);

    // Afterwards: the ledger balances, and every completed execution is exactly one buy order.
    const ledgerAnswer = await adminCall(adminUrl, "GET", "/admin/ledger/check");
    const ledger =
      ledgerAnswer.status === 200
        ? (JSON.parse(ledgerAnswer.body) as { result: { ok: boolean; differences: unknown[] } }).result
        : null;
    const ledgerOk = ledger?.ok === true;
    if (!ledgerOk) {
      notes.push(`LEDGER CHECK FAILED: ${ledgerAnswer.status} ${ledgerAnswer.body.slice(0, 1_000)}`);
    }
    // How the quotes and executes were judged (counterpart_kept_facts_total, summed over the API
    // processes): by the facts or the quote their process kept, or read (the first of a client in a
    // process, another process's quote), or kept but found changed.
    const metricsAnswer = await adminCall(adminUrl, "GET", "/metrics");
    const judged = (use: string, outcome: string) =>
      Number(
        new RegExp(`^counterpart_kept_facts_total\\{use="${use}",outcome="${outcome}"\\} (\\d+)$`, "m").exec(
          metricsAnswer.body,
        )?.[1] ?? Number.NaN,
      );
    const share = (use: string) => ({
      kept: judged(use, "kept"),
      changed: judged(use, "changed"),
      read: judged(use, "read"),
    });
    const quoteShare = share("quote");
    const keptShare = share("execute");
    // How many quotes and executes each statement carried (counterpart_orders_per_call, docs/
    // decisions.md "Orders committed together", "Quotes committed together"), warm-up included.
    const perCall = (use: string) => {
      const of = (what: "sum" | "count") =>
        Number(
          new RegExp(`^counterpart_orders_per_call_${what}\\{use="${use}"\\} (\\d+)$`, "m").exec(
            metricsAnswer.body,
          )?.[1] ?? Number.NaN,
        );
      const calls = of("count");
      return `${of("sum")} in ${calls} statements (${(of("sum") / calls).toFixed(2)} a statement)`;
    };
    notes.push(
      `quotes judged by the client's and pair's facts their process kept: ${quoteShare.kept}, read: ${quoteShare.read}, kept but changed: ${quoteShare.changed}`,
      `executes judged by the quote their process kept: ${keptShare.kept}, read: ${keptShare.read}, kept but changed: ${keptShare.changed}`,
      `quotes stored by the facts kept: ${perCall("quote")}; executes: ${perCall("execute")}`,
    );
    const orderCounts = await database.db
      .selectFrom("orders")
      .select(["type", "status", (eb) => eb.fn.countAll<string>().as("n")])
      .groupBy(["type", "status"])
      .execute();
    const orders = Object.fromEntries(orderCounts.map((r) => [`${r.type} ${r.status}`, Number(r.n)]));
    const completedAnswers = cpSide.completed();
    const consistent =
      (orders["buy completed"] ?? 0) === completedAnswers &&
      sum(orders) === (orders["buy completed"] ?? 0) + (orders["deposit completed"] ?? 0) &&
      (orders["deposit completed"] ?? 0) === clientCount;
    if (!consistent) {
      notes.push(
        `INCONSISTENT: ${completedAnswers} executions answered completed, orders in the database: ${JSON.stringify(orders)}`,
      );
    }
    // Nothing overdrawn, and what the clients hold is what the completed buys say.
    const held = await database.db
      .selectFrom("accounts")
      .select(["asset_id", (eb) => eb.fn.sum<string>("balance").as("total")])
      .where("kind", "=", "client")
      .groupBy("asset_id")
      .execute();
    const unit = parseDecimal(baseAmount) ?? 0n;
    const btcHeld = parseDecimal(held.find((h) => h.asset_id === "BTC")?.total ?? "0");
    const btcExpected = BigInt(completedAnswers) * unit;
    if (btcHeld !== btcExpected) {
      notes.push(
        `INCONSISTENT: clients hold ${formatDecimal(btcHeld ?? 0n)} BTC, the completed buys make ${formatDecimal(btcExpected)}`,
      );
    }
    // The same of the reference, in its own tables.
    const refCompleted = refSide.completed();
    const refFacts = (
      await bench.pgClient.query<{ buys: string; btc: string | null }>(
        `SELECT (SELECT count(*) FROM ref_orders WHERE type = 'buy')::text AS buys,
                (SELECT sum(balance) FROM ref_balances WHERE asset_id = 'BTC')::text AS btc`,
      )
    ).rows[0];
    const refConsistent =
      Number(refFacts?.buys) === refCompleted &&
      parseDecimal(refFacts?.btc ?? "0") === BigInt(refCompleted) * unit;
    if (!refConsistent) {
      notes.push(
        `INCONSISTENT (reference): ${refCompleted} executions answered completed; ${refFacts?.buys} buy orders, ${refFacts?.btc} BTC held`,
      );
    }
    await database.close();

    const comparisons: Comparison[] = [
      comparison(
        {
          scenario: "trading",
          path: "quote → execute pairs",
          unit: "pair",
          connections: workersLoop,
          durationS: ctx.durationS,
          target: 1.0,
        },
        cp.side,
        ref.side,
      ),
    ];
    printComparisons(
      `trading (${workersLoop} workers, ${ctx.durationS} s each in ${slices} alternated slices, ${ctx.warmupS} s warm-up, ${bench.workers} processes per server, ${clientCount} clients; ops are pairs)`,
      comparisons,
    );
    process.stdout.write(
      `\nCounterpart: ${cp.target.requests} pairs completed in ${cp.target.durationS.toFixed(2)} s; ledger check ${ledgerOk ? "clean" : "NOT CLEAN"}; ` +
        `orders ${JSON.stringify(orders)}\nreference: ${ref.target.requests} pairs completed in ${ref.target.durationS.toFixed(2)} s\n`,
    );
    notes.push(...loadNotes([cp.target, ref.target]));

    return {
      name: "trading",
      ok: cp.target.ok && ref.target.ok && ledgerOk && consistent && btcHeld === btcExpected && refConsistent,
      targets: [cp.target, ref.target],
      ratios: { pairs_per_s_counterpart_over_reference: comparisons[0]?.ratio ?? Number.NaN },
      // The bench stops it on purpose; the rest is news.
      serverProblems: {
        counterpart: service.child.output.problems().filter((l) => l !== "counterpart: stopped on SIGTERM"),
        reference: reference.child.output.problems(),
      },
      notes,
      comparisons,
      api_processes: bench.workers,
      clients: clientCount,
      base_amount: baseAmount,
      pairs_per_s: cp.side.opsPerS,
      pair_latency_ms: cp.target.latencyMs,
      database_cpu_us_per_pair: cp.side.pgCpuUsPerOp,
      ledger: { ok: ledgerOk, differences: ledger?.differences.length ?? null },
      orders,
      reference_orders: { buy: Number(refFacts?.buys) },
    };
  },
};
