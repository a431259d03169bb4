// `npm run bench:profile`: where the time of each hot path goes. Starts a throwaway PostgreSQL
// cluster of its own (with pg_stat_statements and auto_explain loaded) and one Counterpart process
// (WORKERS=1, LOG_LEVEL=info as in production) under the V8 inspector, then, path by path, runs a
// short load while it
//   - samples the process's CPU through the inspector (Profiler.start / Profiler.stop), so only the
//     load is profiled, not the start;
//   - reads the process's and the database backends' CPU from /proc;
//   - counts the statements the service sent (pg_stat_statements, top level: round trips) and
//     their execution time. A deferred trigger's statements run at commit, outside any statement,
//     so pg_stat_statements counts them as top level too; they are told apart by their text, which
//     is in the body of a deferred trigger's function, and counted on their own.
// The profile's samples are put in buckets by the file of the function (or, for a native
// function, of its nearest JavaScript caller): authentication, validation, SQL client,
// serialisation, logging, Fastify, Node's HTTP, the use case, GC. Then one request of each path
// runs with auto_explain on, and every plan (EXPLAIN ANALYZE with BUFFERS, nested statements
// included) goes to bench/results/latest-plans.txt; two more of each are sent, and the least
// number of plans logged while one of the three was answered is the statements PostgreSQL ran for
// it. The figures go to bench/results/latest-profile.json and a table per path is printed.
//
// Environment: PROFILE_DURATION_S (default 5) seconds of load per path, after PROFILE_WARMUP_S
// (default 2) seconds not profiled; PROFILE_CONNECTIONS (default 8) concurrent requests. Each
// path's profile is also written as bench/results/latest-profile-<path>.cpuprofile, which Chrome's
// DevTools (Performance tab) and VS Code open.
//
// PROFILE_HEAP=survivors samples, instead of every byte allocated, the bytes that outlive the young
// generation: objects a scavenge collects are dropped from the heap profile, those promoted to the
// old generation are kept (whether a full collection took them later or not). What a request
// leaves to the old generation is what makes scavenges slow (each copies what survives) and full
// collections come. After the load, a burst of short-lived objects is allocated in the process
// (through the inspector) so that what the load left in the young generation is scavenged before
// the profile is read. A control, a loop of objects that die at once, gives 0.1 % of its bytes
// this way.
//
// Figures taken on a busy machine are shares of the process's own CPU: the breakdown holds, the
// absolute µs per request are inflated by whatever else runs.

import crypto from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import { generateKeyPair } from "@counterpart/protocol";
import pg from "pg";
import { openDatabase } from "../packages/server/src/db/database.ts";
import { insertClient } from "../packages/server/src/testing/fixtures.ts";
import { startPgCluster } from "../packages/server/src/testing/pg-cluster.ts";
import { bucketOfFile, httpBucket } from "./buckets.ts";
import {
  Cleanup,
  clockTicksPerSecond,
  cpuTicks,
  fetchOnce,
  fixed,
  type Partner,
  printTable,
  type RequestSpec,
  startService,
  tempDir,
  writeResults,
} from "./lib.ts";
import { backendsOf, CpuSampler, intFromEnv, processTree } from "./proc.ts";

const adminToken = crypto.randomBytes(24).toString("hex");
const clientCount = 32;
const pair = "BTC-AED";

// --- The inspector -------------------------------------------------------------------------------

/** A Chrome DevTools Protocol session over the inspector's WebSocket. */
class Inspector {
  readonly #ws: WebSocket;
  #next = 1;
  readonly #pending = new Map<number, { resolve: (v: unknown) => void; reject: (e: Error) => void }>();

  private constructor(ws: WebSocket) {
    this.#ws = ws;
    ws.addEventListener("message", (event) => {
      const msg = JSON.parse(String(event.data)) as {
        id?: number;
        result?: unknown;
        error?: { message: string };
      };
      if (msg.id === undefined) return;
      const waiter = this.#pending.get(msg.id);
      this.#pending.delete(msg.id);
      if (msg.error) waiter?.reject(new Error(msg.error.message));
      else waiter?.resolve(msg.result);
    });
    ws.addEventListener("close", () => {
      for (const w of this.#pending.values()) w.reject(new Error("the inspector closed"));
      this.#pending.clear();
    });
  }

  static async connect(url: string): Promise<Inspector> {
    const ws = new WebSocket(url);
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no inspector at ${url} within 10 s`)), 10_000);
      ws.addEventListener("open", () => {
        clearTimeout(timer);
        resolve();
      });
      ws.addEventListener("error", () => {
        clearTimeout(timer);
        reject(new Error(`cannot open the inspector at ${url}`));
      });
    });
    return new Inspector(ws);
  }

  call<T>(method: string, params: Record<string, unknown> = {}): Promise<T> {
    const id = this.#next++;
    return new Promise<T>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.#pending.delete(id);
        reject(new Error(`${method}: no answer within 60 s`));
      }, 60_000);
      this.#pending.set(id, {
        resolve: (v) => {
          clearTimeout(timer);
          resolve(v as T);
        },
        reject: (e) => {
          clearTimeout(timer);
          reject(e);
        },
      });
      this.#ws.send(JSON.stringify({ id, method, params }));
    });
  }

  close(): void {
    this.#ws.close();
  }
}

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string };
  children?: number[];
}
interface CpuProfile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}
/** A node of V8's sampling heap profile: `selfSize` estimates the bytes allocated right there. */
interface HeapNode {
  id: number;
  callFrame: { functionName: string; url: string };
  selfSize: number;
  children: HeapNode[];
}

/**
 * A sampling heap profile as a CPU profile whose "time" is bytes, so that the same buckets apply:
 * each node with allocations is one sample weighing its bytes. The heap profile names a CommonJS
 * module (pg, pino, …) by its path where the CPU profile gives a file: URL; both become the URL.
 */
function heapAsProfile(head: HeapNode): CpuProfile {
  const profile: CpuProfile = { nodes: [], samples: [], timeDeltas: [] };
  const stack = [head];
  for (let n = stack.pop(); n !== undefined; n = stack.pop()) {
    const url = n.callFrame.url.startsWith("/") ? `file://${n.callFrame.url}` : n.callFrame.url;
    profile.nodes.push({
      id: n.id,
      callFrame: { functionName: n.callFrame.functionName, url },
      children: n.children.map((c) => c.id),
    });
    if (n.selfSize > 0) {
      profile.samples.push(n.id);
      profile.timeDeltas.push(n.selfSize);
    }
    stack.push(...n.children);
  }
  return profile;
}

// --- Buckets ---------------------------------------------------------------------------------------

/**
 * Self time (µs) per bucket. A native function or one of Node's own (node:…) counts for its
 * nearest caller in a file of ours or of a library: a socket write started by pino is logging, one
 * started by pg is the SQL client; what no such caller started (the HTTP parser reading a request)
 * is HTTP serving.
 */
function bucketTimes(profile: CpuProfile): { times: Map<string, number>; perFunction: Map<string, number> } {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const bucketOfNode = new Map<number, string>();
  const bucketOf = (id: number): string => {
    const known = bucketOfNode.get(id);
    if (known !== undefined) return known;
    const node = byId.get(id);
    let result = "V8 and native, unattributed";
    if (node !== undefined) {
      const { url, functionName } = node.callFrame;
      if (functionName === "(garbage collector)") result = "GC";
      else if (functionName === "(idle)") result = "(idle)";
      else if (functionName === "(program)" || functionName === "(root)")
        result = "V8 and native, unattributed";
      else if (url.startsWith("file:")) result = bucketOfFile(url, functionName);
      else if (url === "" && /^validate\d*$/.test(functionName)) result = "validation (Ajv, our checks)";
      else {
        // Native or node:…: the caller decides; with none of ours or a library's above, it is HTTP.
        let up = parent.get(id);
        while (up !== undefined && !(byId.get(up)?.callFrame.url ?? "").startsWith("file:"))
          up = parent.get(up);
        result = up === undefined ? httpBucket : bucketOf(up);
      }
    }
    bucketOfNode.set(id, result);
    return result;
  };
  const times = new Map<string, number>();
  const perFunction = new Map<string, number>();
  for (let i = 0; i < profile.samples.length; i++) {
    const id = profile.samples[i] ?? 0;
    const b = bucketOf(id);
    const dt = profile.timeDeltas[i] ?? 0;
    times.set(b, (times.get(b) ?? 0) + dt);
    const frame = byId.get(id)?.callFrame;
    if (frame !== undefined && b !== "(idle)") {
      const where = frame.url === "" ? "" : ` ${frame.url.replace(/^.*\/(node_modules|packages)\//, "$1/")}`;
      const key = `${frame.functionName || "(anonymous)"}${where} [${b}]`;
      perFunction.set(key, (perFunction.get(key) ?? 0) + dt);
    }
  }
  return { times, perFunction };
}

// --- Load -------------------------------------------------------------------------------------------

/** Numbers every request of the run, so that references and tokens are never used twice. */
let sequence = 0;

interface PathSpec {
  name: string;
  /** The next request; `n` numbers it within the whole run. */
  request: (n: number) => RequestSpec;
  /** Called with each 200 body and its request's `n` (quotes keep their tokens for the executions). */
  onOk?: (body: Buffer, n: number) => void;
  /** How many more requests may be sent (executions are bounded by the tokens quoted). */
  remaining?: () => number;
}

async function load(
  url: string,
  partner: Partner,
  spec: PathSpec,
  durationS: number,
  connections: number,
): Promise<{ ok: number; failed: Map<string, number> }> {
  const deadline = performance.now() + durationS * 1000;
  let ok = 0;
  const failed = new Map<string, number>();
  const worker = async () => {
    while (performance.now() < deadline) {
      if (spec.remaining !== undefined && spec.remaining() <= 0) return;
      const mine = sequence++;
      const res = await fetchOnce(url, spec.request(mine), partner);
      if (res.status === 200 || res.status === 201) {
        ok++;
        spec.onOk?.(res.body, mine);
      } else {
        const key = `${res.status} ${res.body.toString().slice(0, 120)}`;
        failed.set(key, (failed.get(key) ?? 0) + 1);
      }
    }
  };
  await Promise.all(Array.from({ length: connections }, worker));
  return { ok, failed };
}

// --- Main ---------------------------------------------------------------------------------------------

async function main(): Promise<number> {
  const durationS = intFromEnv("PROFILE_DURATION_S", 5, 1, 120);
  const connections = intFromEnv("PROFILE_CONNECTIONS", 8, 1, 256);
  const warmupS = intFromEnv("PROFILE_WARMUP_S", 2, 0, 60);
  const heapMode = process.env.PROFILE_HEAP || "allocated";
  if (heapMode !== "allocated" && heapMode !== "survivors")
    throw new Error(`PROFILE_HEAP must be "allocated" or "survivors", not ${JSON.stringify(heapMode)}`);
  const survivors = heapMode === "survivors";
  const heapWhat = survivors ? "outlived the young generation" : "allocated";
  const cleanup = new Cleanup();
  try {
    const cluster = await startPgCluster({
      settings: {
        shared_preload_libraries: "'pg_stat_statements,auto_explain'",
        "pg_stat_statements.track": "top",
        "auto_explain.log_min_duration": "-1",
        "auto_explain.log_analyze": "on",
        "auto_explain.log_buffers": "on",
        "auto_explain.log_nested_statements": "on",
        "auto_explain.log_timing": "on",
      },
    });
    cleanup.add("destroy the PostgreSQL cluster", () => cluster.destroy());
    const dbName = "counterpart_profile";
    const databaseUrl = await cluster.createDatabase(dbName);
    const stats = new pg.Client({ connectionString: cluster.url });
    await stats.connect();
    cleanup.add("close the statistics connection", () => stats.end());
    await stats.query("CREATE EXTENSION IF NOT EXISTS pg_stat_statements");

    const scratch = tempDir(cleanup, "cp-profile-");
    const service = await startService(cleanup, {
      // The sources, not the bundle: the buckets are the files the samples fall in.
      entry: "sources",
      dataDir: path.join(scratch, "data"),
      env: {
        DATABASE_URL: databaseUrl,
        WORKERS: "1",
        ADMIN_TOKEN: adminToken,
        LOG_LEVEL: "info",
        QUOTE_LIFETIME_S: "600",
        NODE_OPTIONS: "--inspect=127.0.0.1:0",
      },
    });
    const adminUrl = service.adminUrl;
    if (adminUrl === null) throw new Error("the service runs no admin API");
    const runAtCommit = await deferredTriggerStatements(databaseUrl);
    const wsLine = service.child.output.stderr.find((l) => l.includes("Debugger listening on ws://"));
    const wsUrl = wsLine?.slice(wsLine.indexOf("ws://")).trim();
    if (wsUrl === undefined)
      throw new Error(`no inspector address in the service's output:\n${service.child.output.tail()}`);
    const inspector = await Inspector.connect(wsUrl);
    cleanup.add("close the inspector", () => inspector.close());
    await inspector.call("Profiler.enable");
    await inspector.call("Profiler.setSamplingInterval", { interval: 200 });
    await inspector.call("HeapProfiler.enable");

    const admin = async (method: string, url: string, body?: unknown) => {
      const res = await fetch(`${adminUrl}${url}`, {
        method,
        headers: {
          authorization: `Bearer ${adminToken}`,
          ...(body === undefined ? {} : { "content-type": "application/json" }),
        },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
        signal: AbortSignal.timeout(10_000),
      });
      const text = await res.text();
      if (res.status >= 300) throw new Error(`${method} ${url} answered ${res.status}: ${text}`);
      return JSON.parse(text) as { result: Record<string, unknown> };
    };
    const keys = generateKeyPair();
    const created = await admin("POST", "/admin/partners", {
      name: "Profile Partner",
      public_key_pem: keys.publicKeyPem,
      allowed_ips: ["127.0.0.1/32", "::1/128"],
    });
    const partner: Partner = {
      partnerId: String(created.result.id),
      privateKey: crypto.createPrivateKey(keys.privateKeyPem),
    };
    // Rate limits stay on, as in production, with budgets far above the load (as bench/compare.ts).
    await admin("PUT", `/admin/partners/${partner.partnerId}/limits`, {
      reads: 10_000_000,
      writes: 10_000_000,
      quotes: 10_000_000,
    });
    const database = await openDatabase({ databaseUrl, pgliteDir: null, poolSize: 2 });
    cleanup.add("close the setup's database pool", () => database.close());
    for (let n = 1; n <= clientCount; n++) await insertClient(database.db, partner.partnerId, n);
    // The price is pinned again before each path: a pinned price goes stale like a fed one.
    const pinPrice = () =>
      admin("PUT", `/admin/pairs/${pair}/price`, { buy: "350000", sell: "349000", reason: "test set-up" });
    await pinPrice();

    const json = (method: string, p: string, body: unknown): RequestSpec => ({
      method,
      path: p,
      headers: { "content-type": "application/json" },
      body: JSON.stringify(body),
    });
    const client = (n: number) => `client-${1 + (n % clientCount)}`;
    const runId = crypto.randomBytes(3).toString("hex");
    // The quotes' tokens, spent newest first: the quote path makes more quotes than a process keeps
    // (limits.quotesKeptMax), and an execute of a quote the process no longer keeps is the
    // two-statement path, which a partner executing a fresh quote does not take.
    const tokens: { pcid: string; token: string }[] = [];
    let firstOrder = 0;
    const paths: PathSpec[] = [
      {
        name: "deposit",
        request: (n) =>
          json("POST", "/v1/partner/deposits", {
            partner_client_id: client(n),
            asset_id: "AED",
            amount: "100000.00",
            partner_order_ref: `profile-${runId}-${n}`,
          }),
        onOk: (body) => {
          firstOrder ||= (JSON.parse(body.toString()) as { result: { id: number } }).result.id;
        },
      },
      {
        name: "balances",
        request: (n) => ({ method: "GET", path: `/v1/partner/balances?partner_client_id=${client(n)}` }),
      },
      { name: "asset-pairs", request: () => ({ method: "GET", path: "/v1/partner/asset-pairs" }) },
      { name: "one order", request: () => ({ method: "GET", path: `/v1/partner/orders/${firstOrder}` }) },
      { name: "orders page", request: () => ({ method: "GET", path: "/v1/partner/orders?page_size=20" }) },
      {
        name: "quote",
        request: (n) =>
          json("POST", "/v1/partner/quotes", {
            partner_client_id: client(n),
            asset_pair: pair,
            side: "buy",
            base_amount: "0.001",
          }),
        onOk: (body, n) => {
          const r = (JSON.parse(body.toString()) as { result: { token: string } }).result;
          tokens.push({ pcid: client(n), token: r.token });
        },
      },
      {
        name: "execute",
        request: () => {
          const t = tokens.pop();
          if (t === undefined) throw new Error("no token left");
          return json("POST", "/v1/partner/quotes/execute", { partner_client_id: t.pcid, token: t.token });
        },
        remaining: () => tokens.length,
      },
    ];
    const hz = clockTicksPerSecond();
    const rows: string[][] = [];
    const allocRows: string[][] = [];
    const report: Record<string, unknown>[] = [];
    for (const spec of paths) {
      await pinPrice();
      // Warm-up, not profiled: the first requests of a path compile code and fill caches.
      await load(service.partnerUrl, partner, spec, warmupS, connections);
      await stats.query("SELECT pg_stat_statements_reset()");
      const serverTicks0 = cpuTicks(service.child.pid);
      const db = new CpuSampler(() => backendsOf(dbName));
      db.start();
      await inspector.call("Profiler.start");
      const t0 = performance.now();
      const result = await load(service.partnerUrl, partner, spec, durationS, connections);
      const seconds = (performance.now() - t0) / 1000;
      const { profile } = await inspector.call<{ profile: CpuProfile }>("Profiler.stop");
      const dbTicks = db.stop().ticks;
      const serverTicks =
        processTree(service.child.pid).reduce((s, pid) => s + cpuTicks(pid), 0) - serverTicks0;
      const st = { calls: 0, ms: 0, atCommit: 0 };
      for (const r of (
        await stats.query<{ calls: string; ms: string; query: string }>(
          `SELECT calls::text, total_exec_time::text AS ms, query
             FROM pg_stat_statements s JOIN pg_database d ON d.oid = s.dbid
            WHERE d.datname = $1 AND s.query NOT ILIKE '%pg_stat_statements%'`,
          [dbName],
        )
      ).rows) {
        if (runAtCommit(r.query)) {
          st.atCommit += Number(r.calls);
        } else {
          st.calls += Number(r.calls);
          st.ms += Number(r.ms);
        }
      }
      // Then the same load again with V8's sampling heap profiler instead (not beside the CPU
      // profile, which it would slow): the bytes the process allocates per request, collected or
      // not (or, with PROFILE_HEAP=survivors, those that outlive the young generation), in the
      // same buckets.
      await inspector.call("HeapProfiler.startSampling", {
        samplingInterval: 16_384,
        includeObjectsCollectedByMajorGC: true,
        includeObjectsCollectedByMinorGC: !survivors,
      });
      const allocLoad = await load(service.partnerUrl, partner, spec, durationS, connections);
      if (survivors) {
        // Some 64 MiB of objects dead at once: every scavenge the young generation needs.
        await inspector.call("Runtime.evaluate", {
          expression: "(() => { let o; for (let i = 0; i < 4e6; i++) o = { i }; return o.i; })()",
        });
      }
      const { profile: heap } = await inspector.call<{ profile: { head: HeapNode } }>(
        "HeapProfiler.stopSampling",
      );
      const allocated = bucketTimes(heapAsProfile(heap.head));
      // The whole tree, every sample's stack, for Chrome's DevTools or a script to read.
      fs.mkdirSync(path.join(import.meta.dirname, "results"), { recursive: true });
      fs.writeFileSync(
        path.join(
          import.meta.dirname,
          "results",
          `latest-profile-${spec.name.replace(/\W+/g, "-")}.heapprofile`,
        ),
        JSON.stringify({ head: heap.head }),
      );
      const allocOk = Math.max(allocLoad.ok, 1);
      const allocTotal = [...allocated.times.values()].reduce((a, b) => a + b, 0);
      const top = (
        await stats.query<{ calls: string; query: string }>(
          `SELECT calls::text, left(regexp_replace(query, '\\s+', ' ', 'g'), 140) AS query
             FROM pg_stat_statements s JOIN pg_database d ON d.oid = s.dbid
            WHERE d.datname = $1 ORDER BY calls DESC LIMIT 8`,
          [dbName],
        )
      ).rows;
      const ok = Math.max(result.ok, 1);
      const { times, perFunction } = bucketTimes(profile);
      fs.writeFileSync(
        path.join(
          import.meta.dirname,
          "results",
          `latest-profile-${spec.name.replace(/\W+/g, "-")}.cpuprofile`,
        ),
        JSON.stringify(profile),
      );
      const busy = [...times].filter(([b]) => b !== "(idle)").reduce((s, [, t]) => s + t, 0);
      const serverUs = (serverTicks / hz / ok) * 1e6;
      const share = Object.fromEntries(
        [...times]
          .filter(([b]) => b !== "(idle)")
          .sort((a, b) => b[1] - a[1])
          .map(([b, t]) => [b, t / busy]),
      );
      const entry = {
        path: spec.name,
        requests: result.ok,
        failed: Object.fromEntries(result.failed),
        per_second: result.ok / seconds,
        server_cpu_us_per_request: serverUs,
        database_cpu_us_per_request: (dbTicks / hz / ok) * 1e6,
        statements_per_request: st.calls / ok,
        statements_at_commit_per_request: st.atCommit / ok,
        statement_time_us_per_request: (st.ms * 1000) / ok,
        profiled_cpu_us_per_request: busy / ok,
        share,
        top_functions: [...perFunction]
          .sort((a, b) => b[1] - a[1])
          .slice(0, 25)
          .map(([f, t]) => ({ function: f, share: t / busy })),
        top_statements: top.map((t) => ({ calls: Number(t.calls), query: t.query })),
        allocated_bytes_per_request: allocTotal / allocOk,
        allocated_bytes_per_request_by_bucket: Object.fromEntries(
          [...allocated.times].sort((a, b) => b[1] - a[1]).map(([b, bytes]) => [b, bytes / allocOk]),
        ),
        top_allocating_functions: [...allocated.perFunction]
          .sort((a, b) => b[1] - a[1])
          .slice(0, 25)
          .map(([f, bytes]) => ({ function: f, bytes_per_request: bytes / allocOk })),
      };
      report.push(entry);
      process.stdout.write(
        `\n${spec.name}: ${result.ok} requests in ${fixed(seconds, 1)} s (${fixed(entry.per_second, 0)}/s), ` +
          `server CPU ${fixed(serverUs, 0)} µs/request, database CPU ${fixed(entry.database_cpu_us_per_request, 0)} µs, ` +
          `${fixed(entry.statements_per_request, 2)} statements sent (${fixed(entry.statement_time_us_per_request, 0)} µs executing)` +
          (st.atCommit > 0
            ? `, and ${fixed(entry.statements_at_commit_per_request, 2)} run at commit by deferred triggers`
            : "") +
          "\n",
      );
      if (result.failed.size > 0) process.stdout.write(`  failures: ${JSON.stringify(entry.failed)}\n`);
      for (const [b, s] of Object.entries(share)) {
        if (s < 0.005) continue;
        rows.push([spec.name, b, `${fixed(s * 100, 1)} %`, fixed(s * serverUs, 0)]);
      }
      process.stdout.write(
        `  ${heapWhat}: ${fixed(entry.allocated_bytes_per_request / 1024, 1)} KiB per request (${allocLoad.ok} requests sampled)\n`,
      );
      if (allocLoad.failed.size > 0)
        process.stdout.write(
          `  failures while sampling: ${JSON.stringify(Object.fromEntries(allocLoad.failed))}\n`,
        );
      for (const [b, bytes] of Object.entries(entry.allocated_bytes_per_request_by_bucket)) {
        if (bytes < 0.005 * entry.allocated_bytes_per_request) continue;
        allocRows.push([
          spec.name,
          b,
          `${fixed((100 * bytes) / entry.allocated_bytes_per_request, 1)} %`,
          fixed(bytes / 1024, 1),
        ]);
      }
    }
    printTable(
      `where the server's CPU goes (µs per request = share of the profiled CPU × the process's CPU per request; ${connections} connections, ${durationS} s per path)`,
      ["path", "bucket", "share", "µs/request"],
      rows,
    );
    printTable(
      survivors
        ? `what outlives the young generation, by where it was allocated (V8's sampling heap profiler, every 16 KiB, objects scavenges collected left out; a second run of ${durationS} s per path)`
        : `where the server's allocations go (V8's sampling heap profiler, every 16 KiB, collected objects included; a second run of ${durationS} s per path)`,
      ["path", "bucket", "share", "KiB/request"],
      allocRows,
    );

    // One request per path with every plan logged, then two more whose plans are only counted.
    // The statements PostgreSQL ran for a request are the plans logged between its sending and its
    // answer (a backend writes its log line before it answers); background work (the webhook
    // worker's rounds, the leader's checks) may log in that window too, so a path's count is the
    // least of its three requests'.
    await stats.query("ALTER SYSTEM SET auto_explain.log_min_duration = 0");
    await stats.query("SELECT pg_reload_conf()");
    const logFile = path.join(cluster.dataDir, "server.log");
    const plans: string[] = [];
    await pinPrice();
    for (const spec of paths) {
      const counts: number[] = [];
      for (let attempt = 0; attempt < 3; attempt++) {
        const n = sequence++;
        let request: ReturnType<typeof spec.request>;
        if (spec.name !== "execute") request = spec.request(n);
        else {
          // A fresh quote for the execution, so that its plan is of a live token.
          const q = await fetchOnce(
            service.partnerUrl,
            paths.find((p) => p.name === "quote")!.request(n),
            partner,
          );
          if (q.status !== 200)
            throw new Error(`quote for the execution's plan answered ${q.status}: ${q.body}`);
          const r = (JSON.parse(q.body.toString()) as { result: { token: string } }).result;
          tokens.push({ pcid: client(n), token: r.token });
          await new Promise((r) => setTimeout(r, 200));
          request = spec.request(0);
        }
        const from = fs.statSync(logFile).size;
        const res = await fetchOnce(service.partnerUrl, request, partner);
        const answered = fs.statSync(logFile).size;
        if (res.status !== 200)
          throw new Error(`${spec.name} for its plans answered ${res.status}: ${res.body}`);
        counts.push(plansLogged(readFrom(logFile, from, answered)));
        if (attempt === 0) {
          await new Promise((r) => setTimeout(r, 300));
          plans.push(`==== ${spec.name} (${res.status}) ====\n${readFrom(logFile, from)}`);
        }
      }
      const entry = report.find((r) => r.path === spec.name);
      if (entry !== undefined) entry.statements_run_in_database_per_request = Math.min(...counts);
    }
    printTable(
      "statements PostgreSQL ran for one request (auto_explain: those sent, those run inside them by functions, triggers and foreign keys, and those run at commit; the least of three requests)",
      ["path", "sent per request (under load, above)", "run in PostgreSQL"],
      report.map((r) => [
        String(r.path),
        fixed(r.statements_per_request as number, 2),
        String(r.statements_run_in_database_per_request),
      ]),
    );
    await stats.query("ALTER SYSTEM RESET auto_explain.log_min_duration");
    await stats.query("SELECT pg_reload_conf()");
    fs.mkdirSync(path.join(import.meta.dirname, "results"), { recursive: true });
    const plansFile = path.join(import.meta.dirname, "results", "latest-plans.txt");
    fs.writeFileSync(plansFile, plans.join("\n\n"));
    const written = writeResults("profile", { connections, durationS, heap: heapMode, paths: report });
    process.stdout.write(`\nprofile: figures in ${written}, plans in ${plansFile}\n`);
    return report.every((r) => Object.keys(r.failed as object).length === 0) ? 0 : 1;
  } finally {
    await cleanup.run();
  }
}

/**
 * The statements whose plans auto_explain logged in `log`: one "duration: … plan:" entry each,
 * nested statements and those run at commit included.
 */
function plansLogged(log: string): number {
  return [...log.matchAll(/ LOG: {2}duration: [0-9.]+ ms {2}plan:/g)].length;
}

/** The file's bytes from `offset` to `end` (by default its end), as text. */
function readFrom(file: string, offset: number, end?: number): string {
  const fd = fs.openSync(file, "r");
  try {
    const size = end ?? fs.fstatSync(fd).size;
    const buf = Buffer.alloc(Math.max(0, size - offset));
    fs.readSync(fd, buf, 0, buf.length, offset);
    return buf.toString("utf8");
  } finally {
    fs.closeSync(fd);
  }
}

process.exitCode = await main();

function spaced(text: string): string {
  return text.replace(/\s+/g, " ").trim();
}

/**
 * Whether a statement pg_stat_statements recorded is one a deferred trigger's function runs (at
 * commit): its text's start (before any constant pg_stat_statements may have replaced) is in the
 * body of such a function. Read once, on the migrated database.
 */
async function deferredTriggerStatements(databaseUrl: string): Promise<(query: string) => boolean> {
  const c = new pg.Client({ connectionString: databaseUrl });
  await c.connect();
  try {
    const { rows } = await c.query<{ body: string }>(
      `SELECT DISTINCT p.prosrc AS body FROM pg_trigger t JOIN pg_proc p ON p.oid = t.tgfoid
        WHERE t.tgdeferrable AND NOT t.tgisinternal`,
    );
    const bodies = rows.map((r) => spaced(r.body));
    return (query) => {
      const head = spaced(query).slice(0, 32);
      return head.length >= 16 && bodies.some((b) => b.includes(head));
    };
  } finally {
    await c.end();
  }
}
