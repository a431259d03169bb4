// Memory under a long mixed load: the resident set (RSS) of every process of the service, on
// PostgreSQL (BENCH_WORKERS API processes, default 2) and on the PGlite sandbox (one process,
// PostgreSQL compiled to WASM inside it), both loaded at the same time for BENCH_MEMORY_S seconds
// (default 600). Each of BENCH_MEMORY_LOOPS loops per service (default 8) works for one client of
// its own, over and over: a deposit, its balances, a quote and its execution, a withdrawal, a page
// of orders, the deposit's order, the asset pairs, and every fifth time two refusals (a deposit
// with a negative amount, 422; an order that does not exist, 404). Every request is freshly
// signed. RSS is read from /proc/<pid>/status every 5 s; printed per process: after the first
// minute, the highest, and at the end, with the requests answered, the CPU the service's processes
// used per request (/proc, before and after the load) and the time V8 spent collecting garbage per
// request (the service's own /metrics, before and after), so a setting that trades CPU for memory
// shows both. Nothing here is a ratio: the
// figure to compare is the bound, 256 MiB per API process on PostgreSQL.
//
// Environment (besides run.ts's): BENCH_MEMORY_S, BENCH_MEMORY_LOOPS, BENCH_DATABASE_URL,
// BENCH_WORKERS (see deposits.ts).

import fs from "node:fs";
import path from "node:path";
import { adminCall, adminToken, startPair } from "../compare.ts";
import {
  clockTicksPerSecond,
  cpuTicks,
  fetchOnce,
  onboardClient,
  type Partner,
  printTable,
  type Scenario,
  type ScenarioReport,
  sleep,
  startService,
  withTimeout,
} from "../lib.ts";
import { intFromEnv, processTree } from "../proc.ts";

const sampleEveryMs = 5_000;
const pair = "BTC-AED";
const price = { buy: "350000", sell: "349000" };

interface Target {
  name: string;
  url: string;
  adminUrl: string;
  partner: Partner;
  rootPid: number;
  /** One client per loop. */
  clients: string[];
}

interface Tally {
  answered: Record<string, number>;
  /** Answers that were not the one expected, by "what status". */
  unexpected: Record<string, number>;
  firstUnexpected: string | null;
  errors: number;
}

interface Samples {
  /** pid → RSS in KiB at each sample. */
  rss: Map<number, number[]>;
  times: number[];
}

function rssKib(pid: number): number | null {
  try {
    const status = fs.readFileSync(`/proc/${pid}/status`, "utf8");
    const m = /^VmRSS:\s+(\d+) kB$/m.exec(status);
    return m === null ? null : Number(m[1]);
  } catch {
    return null;
  }
}

/** User + system CPU of a process and its children so far, in clock ticks (0 for one that is gone). */
function treeCpuTicks(rootPid: number): number {
  let ticks = 0;
  for (const pid of processTree(rootPid)) {
    try {
      ticks += cpuTicks(pid);
    } catch {
      // exited between the listing and the read
    }
  }
  return ticks;
}

function sample(target: Target, samples: Samples, t: number): void {
  samples.times.push(t);
  for (const pid of processTree(target.rootPid)) {
    const kib = rssKib(pid);
    if (kib === null) continue;
    const series = samples.rss.get(pid) ?? [];
    series.push(kib);
    samples.rss.set(pid, series);
  }
}

/** One loop: one client, every path in turn, until the deadline. */
async function loop(target: Target, pcid: string, deadline: number, tally: Tally, n: { i: number }) {
  const call = async (
    what: string,
    method: string,
    url: string,
    expected: number,
    body?: unknown,
  ): Promise<unknown> => {
    try {
      const res = await fetchOnce(
        target.url,
        {
          method,
          path: url,
          ...(body === undefined
            ? {}
            : { headers: { "content-type": "application/json" }, body: JSON.stringify(body) }),
        },
        target.partner,
      );
      if (res.status !== expected) {
        const key = `${what} ${res.status}`;
        tally.unexpected[key] = (tally.unexpected[key] ?? 0) + 1;
        tally.firstUnexpected ??= `${key}: ${res.body.toString().slice(0, 300)}`;
        return null;
      }
      tally.answered[what] = (tally.answered[what] ?? 0) + 1;
      return JSON.parse(res.body.toString()) as unknown;
    } catch (err) {
      tally.errors++;
      tally.firstUnexpected ??= `${what}: ${err instanceof Error ? err.message : String(err)}`;
      // A refused connection must not turn the loop into a busy spin.
      await sleep(100);
      return null;
    }
  };
  while (Date.now() < deadline) {
    const i = ++n.i;
    const ref = `mem-${pcid}-${i}`;
    const deposit = (await call("deposit", "POST", "/v1/partner/deposits", 200, {
      partner_client_id: pcid,
      asset_id: "AED",
      amount: "1000",
      partner_order_ref: ref,
    })) as { result: { id: number } } | null;
    await call("balances", "GET", `/v1/partner/balances?partner_client_id=${pcid}`, 200);
    const quote = (await call("quote", "POST", "/v1/partner/quotes", 200, {
      partner_client_id: pcid,
      asset_pair: pair,
      side: "buy",
      base_amount: "0.001",
    })) as { result: { token: string } } | null;
    if (quote !== null) {
      await call("execute", "POST", "/v1/partner/quotes/execute", 200, {
        partner_client_id: pcid,
        token: quote.result.token,
      });
    }
    await call("withdrawal", "POST", "/v1/partner/withdrawals", 200, {
      partner_client_id: pcid,
      asset_id: "AED",
      amount: "100",
      partner_order_ref: `${ref}-w`,
    });
    await call("orders page", "GET", "/v1/partner/orders?page_size=20", 200);
    if (deposit !== null) await call("one order", "GET", `/v1/partner/orders/${deposit.result.id}`, 200);
    await call("asset-pairs", "GET", "/v1/partner/asset-pairs", 200);
    if (i % 5 === 0) {
      await call("negative deposit", "POST", "/v1/partner/deposits", 422, {
        partner_client_id: pcid,
        asset_id: "AED",
        amount: "-1",
        partner_order_ref: `${ref}-bad`,
      });
      await call("missing order", "GET", "/v1/partner/orders/999999999", 404);
    }
  }
}

async function setPrice(adminUrl: string): Promise<void> {
  const res = await adminCall(adminUrl, "PUT", `/admin/pairs/${pair}/price`, { ...price, reason: "bench" });
  if (res.status !== 200) throw new Error(`price set answered ${res.status}: ${res.body}`);
}

/** Seconds V8 spent collecting garbage in the service's API processes, from its /metrics (summed over them). */
async function gcSeconds(adminUrl: string): Promise<number> {
  const res = await fetch(`${adminUrl}/metrics`, {
    headers: { authorization: `Bearer ${adminToken}` },
    signal: AbortSignal.timeout(10_000),
  });
  const text = await res.text();
  let sum = 0;
  for (const m of text.matchAll(/^counterpart_nodejs_gc_duration_seconds_sum\{[^}]*\} ([0-9.e+-]+)$/gm))
    sum += Number(m[1]);
  return sum;
}

const mib = (kib: number | undefined) => (kib === undefined ? "-" : (kib / 1024).toFixed(0));

export const memory: Scenario = {
  name: "memory",
  description:
    "RSS of every process of the service under a long mixed load, on PostgreSQL and on the PGlite sandbox at once",
  budgetS: intFromEnv("BENCH_MEMORY_S", 600, 10, 7_200) + 600,

  async run(ctx): Promise<ScenarioReport> {
    const durationS = intFromEnv("BENCH_MEMORY_S", 600, 10, 7_200);
    // One client each: the PostgreSQL side has startPair's BENCH_CLIENTS (64 by default).
    const loops = intFromEnv("BENCH_MEMORY_LOOPS", 8, 1, 64);
    const notes: string[] = [];

    const pg = await startPair(ctx, { referenceAed: "0" });
    if (loops > pg.clientCount)
      throw new Error(
        `BENCH_MEMORY_LOOPS (${loops}) is above BENCH_CLIENTS (${pg.clientCount}): one client per loop`,
      );
    const sandbox = await startService(ctx.cleanup, {
      dataDir: path.join(ctx.scratchDir, "sandbox"),
      env: { ADMIN_TOKEN: adminToken },
      name: "counterpart (sandbox)",
      readyTimeoutMs: 240_000,
    });
    if (sandbox.partner === null || sandbox.adminUrl === null)
      throw new Error("the sandbox wrote no demo partner");
    const limits = await adminCall(
      sandbox.adminUrl,
      "PUT",
      `/admin/partners/${sandbox.partner.partnerId}/limits`,
      {
        reads: 10_000_000,
        writes: 10_000_000,
        quotes: 10_000_000,
      },
    );
    if (limits.status !== 200) throw new Error(`sandbox limits answered ${limits.status}: ${limits.body}`);

    const targets: Target[] = [
      {
        name: `PostgreSQL, ${pg.workers} API processes`,
        url: pg.service.partnerUrl,
        adminUrl: pg.adminUrl,
        partner: pg.partner,
        rootPid: pg.service.child.pid,
        clients: Array.from({ length: loops }, (_, k) => `client-${k + 1}`),
      },
      {
        name: "PGlite sandbox",
        url: sandbox.partnerUrl,
        adminUrl: sandbox.adminUrl,
        partner: sandbox.partner,
        rootPid: sandbox.child.pid,
        clients: Array.from({ length: loops }, (_, k) => `mem-client-${k + 1}`),
      },
    ];
    // The PostgreSQL side's clients are already made (startPair); the sandbox's are onboarded.
    for (const [k, pcid] of (targets[1]?.clients ?? []).entries()) {
      await onboardClient(sandbox.partnerUrl, sandbox.partner, pcid, 9_000_000 + k);
    }
    for (const t of targets) await setPrice(t.adminUrl);
    // The feed is manual: the price is set again well inside its staleness bound.
    const refresher = setInterval(() => {
      for (const t of targets) setPrice(t.adminUrl).catch(() => {});
    }, 15_000);
    ctx.cleanup.add("stop the price refresher", () => clearInterval(refresher));

    process.stdout.write(
      `bench: ${loops} loops per service for ${durationS} s; RSS sampled every ${sampleEveryMs / 1000} s\n`,
    );
    const gcBefore = await Promise.all(targets.map((t) => gcSeconds(t.adminUrl)));
    const cpuBefore = targets.map((t) => treeCpuTicks(t.rootPid));
    const started = Date.now();
    const deadline = started + durationS * 1000;
    const tallies = targets.map(
      () => ({ answered: {}, unexpected: {}, firstUnexpected: null, errors: 0 }) as Tally,
    );
    const samples = targets.map(() => ({ rss: new Map(), times: [] }) as Samples);
    const sampler = setInterval(() => {
      for (const [k, t] of targets.entries()) sample(t, samples[k] as Samples, Date.now() - started);
    }, sampleEveryMs);
    ctx.cleanup.add("stop the RSS sampler", () => clearInterval(sampler));
    for (const [k, t] of targets.entries()) sample(t, samples[k] as Samples, 0);
    try {
      await withTimeout(
        Promise.all(
          targets.flatMap((t, k) => {
            const n = { i: 0 };
            return t.clients.map((pcid) => loop(t, pcid, deadline, tallies[k] as Tally, n));
          }),
        ),
        (durationS + 120) * 1000,
        "mixed load",
      );
    } finally {
      clearInterval(sampler);
      clearInterval(refresher);
    }
    for (const [k, t] of targets.entries()) sample(t, samples[k] as Samples, Date.now() - started);
    const gcAfter = await Promise.all(targets.map((t) => gcSeconds(t.adminUrl)));
    const cpuAfter = targets.map((t) => treeCpuTicks(t.rootPid));

    const rows: string[][] = [];
    const processes: Record<string, unknown>[] = [];
    for (const [k, t] of targets.entries()) {
      const s = samples[k] as Samples;
      const afterMinute = s.times.findIndex((x) => x >= 60_000);
      for (const [pid, series] of s.rss) {
        const role = pid === t.rootPid ? "primary" : "worker";
        const row = {
          service: t.name,
          pid,
          role,
          rss_mib_at_start: Number(mib(series[0])),
          rss_mib_after_1_min: afterMinute < 0 ? null : Number(mib(series[afterMinute])),
          rss_mib_peak: Number(mib(Math.max(...series))),
          rss_mib_at_end: Number(mib(series.at(-1))),
          rss_mib_each_minute: series
            .filter((_, i) => i % Math.round(60_000 / sampleEveryMs) === 0)
            .map((kib) => Number(mib(kib))),
        };
        processes.push(row);
        rows.push([
          t.name,
          `${role} ${pid}`,
          mib(series[0]),
          afterMinute < 0 ? "-" : mib(series[afterMinute]),
          mib(Math.max(...series)),
          mib(series.at(-1)),
        ]);
      }
    }
    printTable(
      `memory (${loops} loops per service, ${durationS} s of mixed load at once on both)`,
      ["service", "process", "RSS MiB at start", "after 1 min", "peak", "at end"],
      rows,
    );

    let ok = true;
    const gcPerRequest: Record<string, number> = {};
    const cpuPerRequest: Record<string, number> = {};
    for (const [k, t] of targets.entries()) {
      const tally = tallies[k] as Tally;
      const answered = Object.values(tally.answered).reduce((a, b) => a + b, 0);
      const gcUs = (((gcAfter[k] ?? 0) - (gcBefore[k] ?? 0)) * 1e6) / Math.max(1, answered);
      gcPerRequest[t.name] = gcUs;
      const cpuUs =
        ((((cpuAfter[k] ?? 0) - (cpuBefore[k] ?? 0)) / clockTicksPerSecond()) * 1e6) / Math.max(1, answered);
      cpuPerRequest[t.name] = cpuUs;
      process.stdout.write(
        `\n${t.name}: ${answered} requests answered as expected (${(answered / durationS).toFixed(0)}/s), ${cpuUs.toFixed(0)} µs of the service's CPU (all its processes) and ${gcUs.toFixed(0)} µs of garbage collection per request: ${JSON.stringify(tally.answered)}\n`,
      );
      const unexpected = Object.values(tally.unexpected).reduce((a, b) => a + b, 0);
      if (unexpected > 0 || tally.errors > 0) {
        ok = false;
        notes.push(
          `${t.name}: ${unexpected} unexpected answers ${JSON.stringify(tally.unexpected)} and ${tally.errors} failed requests; first: ${tally.firstUnexpected}`,
        );
      }
    }
    return {
      name: "memory",
      ok,
      targets: [],
      ratios: {},
      serverProblems: {
        "counterpart (PostgreSQL)": pg.service.child.output
          .problems()
          .filter((l) => l !== "counterpart: stopped on SIGTERM"),
        "counterpart (sandbox)": sandbox.child.output.problems(),
      },
      notes,
      duration_s: durationS,
      loops,
      processes,
      gc_us_per_request: gcPerRequest,
      cpu_us_per_request: cpuPerRequest,
      answered: Object.fromEntries(targets.map((t, k) => [t.name, tallies[k]?.answered])),
    };
  },
};
