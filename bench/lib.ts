// Building blocks for the benchmarks in bench/run.ts: child processes (the service, comparison
// servers) that are always stopped, signed load with autocannon, server CPU per request from
// /proc, tables and result files. Only loopback traffic; every wait is bounded.

import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { createPrivateKey, type KeyObject } from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { createHistogram, type RecordableHistogram } from "node:perf_hooks";
import { signRequest } from "@counterpart/protocol";
import autocannon, { type Request, type Result } from "autocannon";
import { clientPayload } from "../packages/server/src/testing/fixtures.ts";
import { startScriptExecArgv } from "../packages/server/src/testing/processes.ts";

type RequestParams = Request;

export const repoRoot = path.resolve(import.meta.dirname, "..");
export const resultsDir = path.join(import.meta.dirname, "results");

// ---------------------------------------------------------------------------------------------
// Cleanup: everything a scenario starts registers how to undo it; undone in reverse order.

const liveChildren = new Set<ChildProcess>();
const liveTempDirs = new Set<string>();

// Last resort if the bench process exits without running its cleanups (an uncaught error).
process.on("exit", () => {
  for (const child of liveChildren) child.kill("SIGKILL");
  for (const dir of liveTempDirs) fs.rmSync(dir, { recursive: true, force: true });
});

export class Cleanup {
  readonly #tasks: { label: string; fn: () => Promise<void> | void }[] = [];

  add(label: string, fn: () => Promise<void> | void): void {
    this.#tasks.push({ label, fn });
  }

  /** Runs every task (last added first); a failing task is reported and does not stop the rest. */
  async run(): Promise<void> {
    for (let task = this.#tasks.pop(); task !== undefined; task = this.#tasks.pop()) {
      try {
        await task.fn();
      } catch (err) {
        process.stderr.write(`bench: cleanup "${task.label}" failed: ${String(err)}\n`);
      }
    }
  }
}

/** A fresh temporary directory, removed by `cleanup`. */
export function tempDir(cleanup: Cleanup, prefix: string): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), `${prefix}-`));
  liveTempDirs.add(dir);
  cleanup.add(`remove ${dir}`, () => {
    fs.rmSync(dir, { recursive: true, force: true });
    liveTempDirs.delete(dir);
  });
  return dir;
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** Rejects with `what` timed out after `ms`. The timer never outlives the promise. */
export async function withTimeout<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: timed out after ${ms} ms`)), ms);
  });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

// ---------------------------------------------------------------------------------------------
// Child processes

/** The last lines a child wrote, per stream. */
export class OutputLog {
  readonly stdout: string[] = [];
  readonly stderr: string[] = [];
  readonly #partial = { stdout: "", stderr: "" };
  readonly #maxLines = 5_000;

  add(stream: "stdout" | "stderr", chunk: string): void {
    const text = this.#partial[stream] + chunk;
    const lines = text.split("\n");
    this.#partial[stream] = lines.pop() ?? "";
    const store = this[stream];
    store.push(...lines);
    if (store.length > this.#maxLines) store.splice(0, store.length - this.#maxLines);
  }

  tail(n = 30): string {
    const all = [...this.stdout.map((l) => `[out] ${l}`), ...this.stderr.map((l) => `[err] ${l}`)];
    return all.slice(-n).join("\n");
  }

  /**
   * Lines that look like trouble: pino JSON lines at warn level or above (40+) on either stream,
   * and any non-empty stderr line that is not JSON.
   */
  problems(): string[] {
    const out: string[] = [];
    for (const [stream, lines] of [
      ["stdout", this.stdout],
      ["stderr", this.stderr],
    ] as const) {
      for (const line of lines) {
        const trimmed = line.trim();
        if (trimmed === "") continue;
        if (trimmed.startsWith("{")) {
          try {
            const entry = JSON.parse(trimmed) as { level?: unknown };
            if (typeof entry.level === "number" && entry.level >= 40) out.push(trimmed);
            continue;
          } catch {
            // not JSON after all: judged below
          }
        }
        if (stream === "stderr") out.push(trimmed);
      }
    }
    return out;
  }
}

export interface Child {
  name: string;
  proc: ChildProcess;
  pid: number;
  output: OutputLog;
  /** Resolves when the process has exited. */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  isRunning(): boolean;
}

/** Starts `node <args>` from the repository root; `cleanup` stops it. */
export function spawnNode(
  cleanup: Cleanup,
  name: string,
  args: string[],
  env: NodeJS.ProcessEnv,
  onOutput?: (stream: "stdout" | "stderr", chunk: string) => void,
): Child {
  const proc = spawn(process.execPath, args, { cwd: repoRoot, env, stdio: ["ignore", "pipe", "pipe"] });
  if (proc.pid === undefined) throw new Error(`${name}: could not start ${args.join(" ")}`);
  liveChildren.add(proc);
  const output = new OutputLog();
  for (const stream of ["stdout", "stderr"] as const) {
    proc[stream]?.setEncoding("utf8");
    proc[stream]?.on("data", (chunk: string) => {
      output.add(stream, chunk);
      onOutput?.(stream, chunk);
    });
  }
  let running = true;
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    proc.once("exit", (code, signal) => {
      running = false;
      liveChildren.delete(proc);
      resolve({ code, signal });
    });
  });
  const child: Child = { name, proc, pid: proc.pid, output, exited, isRunning: () => running };
  cleanup.add(`stop ${name}`, () => stopChild(child));
  return child;
}

/** SIGTERM, then SIGKILL if the child has not exited after `graceMs`. */
export async function stopChild(child: Child, graceMs = 5_000): Promise<void> {
  if (!child.isRunning()) return;
  child.proc.kill("SIGTERM");
  const exitedInTime = await Promise.race([child.exited.then(() => true), sleep(graceMs).then(() => false)]);
  if (exitedInTime) return;
  process.stderr.write(
    `bench: ${child.name} (pid ${child.pid}) ignored SIGTERM for ${graceMs} ms; SIGKILL\n`,
  );
  child.proc.kill("SIGKILL");
  await withTimeout(child.exited, 5_000, `${child.name}: exit after SIGKILL`);
}

// ---------------------------------------------------------------------------------------------
// The service

export interface Partner {
  partnerId: string;
  privateKey: KeyObject;
}

export interface Service {
  child: Child;
  dataDir: string;
  partnerUrl: string;
  adminUrl: string | null;
  /** The sandbox demo partner (PGlite only). */
  partner: Partner | null;
}

// Everything the service reads from its environment: the bench decides, not the calling shell.
const serviceVariables = [
  "PORT",
  "ADMIN_PORT",
  "HOST",
  "ADMIN_TOKEN",
  "DATA_DIR",
  "DATABASE_URL",
  "WORKERS",
  "LOG_LEVEL",
  "TRUST_PROXY",
  "FILE_URL_SECRET",
  "PRICE_FEED",
  "PRICE_STALE_AFTER_S",
  "QUOTE_LIFETIME_S",
  "LEGAL_AGE",
  "REDIS_URL",
  "REDIS_TIMEOUT_MS",
  "RATE_LIMITS",
  "SIGNATURE_VERIFIER",
];

/**
 * What a service process runs. "bundle": the production process, `node packages/server/dist/server.js`
 * (docs/operations.md, "Deploying"), built from the sources by the bench itself at its first use, so
 * it measures the tree as it is; "sources": `counterpart serve` from the TypeScript sources, as the
 * sandbox (`npm start`) runs. The two differ in start-up and resident memory (a process from the
 * sources type-strips some 1,500 modules and keeps each one's text), not in what a request does.
 */
export type ServiceEntry = "bundle" | "sources";

const serviceEntries: readonly ServiceEntry[] = ["bundle", "sources"];

/**
 * The entry a service on PostgreSQL runs: BENCH_ENTRY when set (to compare the two), otherwise the
 * production bundle. The PGlite sandbox always runs from the sources, as `npm start` does.
 */
export function postgresEntry(): ServiceEntry {
  const raw = process.env.BENCH_ENTRY;
  if (raw === undefined || raw === "") return "bundle";
  if (!(serviceEntries as readonly string[]).includes(raw))
    throw new Error(`BENCH_ENTRY must be one of ${serviceEntries.join(", ")}, not ${JSON.stringify(raw)}`);
  return raw as ServiceEntry;
}

let bundleBuilt = false;

/** Builds packages/server/dist/server.js from the sources, once per bench process. */
function buildBundleOnce(): void {
  if (bundleBuilt) return;
  execFileSync(process.execPath, ["scripts/build-server.ts"], { cwd: repoRoot, stdio: "inherit" });
  bundleBuilt = true;
}

/**
 * Starts the service in its own process on loopback ports chosen by the OS and waits for
 * `<dataDir>/endpoints.json`. Defaults: PGlite in `dataDir`, PRICE_FEED=manual, LOG_LEVEL=warn;
 * `env` adds or overrides (e.g. DATABASE_URL, WORKERS). `entry` (default "sources") says what the
 * process runs (ServiceEntry); the sources run as `npm start` runs them, with its Node options.
 */
export async function startService(
  cleanup: Cleanup,
  options: {
    dataDir: string;
    env?: Record<string, string>;
    readyTimeoutMs?: number;
    name?: string;
    entry?: ServiceEntry;
  },
): Promise<Service> {
  const name = options.name ?? "counterpart";
  const entry = options.entry ?? "sources";
  const env: NodeJS.ProcessEnv = { ...process.env };
  for (const key of serviceVariables) delete env[key];
  Object.assign(env, {
    DATA_DIR: options.dataDir,
    HOST: "127.0.0.1",
    PORT: "0",
    ADMIN_PORT: "0",
    PRICE_FEED: "manual",
    LOG_LEVEL: "warn",
    // The service's own default (auto) unless BENCH_SIGNATURE_VERIFIER names a library.
    ...(process.env.BENCH_SIGNATURE_VERIFIER
      ? { SIGNATURE_VERIFIER: process.env.BENCH_SIGNATURE_VERIFIER }
      : {}),
    ...options.env,
  });
  fs.mkdirSync(options.dataDir, { recursive: true });
  const endpointsFile = path.join(options.dataDir, "endpoints.json");
  fs.rmSync(endpointsFile, { force: true });

  if (entry === "bundle") buildBundleOnce();
  const args =
    entry === "bundle"
      ? ["packages/server/dist/server.js"]
      : [...startScriptExecArgv(), "packages/cli/src/main.ts", "serve"];
  process.stdout.write(`bench: ${name}: node ${args.join(" ")}\n`);
  const child = spawnNode(cleanup, name, args, env);
  const timeoutMs = options.readyTimeoutMs ?? 90_000;
  const deadline = Date.now() + timeoutMs;
  type Endpoints = { partner_url: string | null; admin_url: string | null };
  let endpoints: Endpoints | null = null;
  while (endpoints === null) {
    if (!child.isRunning()) {
      const { code, signal } = await child.exited;
      throw new Error(
        `${name} exited during start (code ${code}, signal ${signal}):\n${child.output.tail()}`,
      );
    }
    if (Date.now() > deadline) {
      throw new Error(
        `${name} did not write ${endpointsFile} within ${timeoutMs} ms:\n${child.output.tail()}`,
      );
    }
    try {
      const parsed = JSON.parse(fs.readFileSync(endpointsFile, "utf8")) as Endpoints | null;
      if (parsed?.partner_url) endpoints = parsed;
    } catch {
      // not there yet, or caught half-written
    }
    if (endpoints === null) await sleep(100);
  }
  const partnerUrl = endpoints.partner_url;
  if (partnerUrl === null) throw new Error(`${name}: endpoints.json has no partner_url`);
  assertLoopback(partnerUrl);
  if (endpoints.admin_url !== null) assertLoopback(endpoints.admin_url);
  return {
    child,
    dataDir: options.dataDir,
    partnerUrl,
    adminUrl: endpoints.admin_url,
    partner: readDemoPartner(options.dataDir),
  };
}

/** `<dataDir>/demo-partner/`, which the service writes on PGlite; null when absent. */
export function readDemoPartner(dataDir: string): Partner | null {
  const dir = path.join(dataDir, "demo-partner");
  if (!fs.existsSync(path.join(dir, "partner.json"))) return null;
  const info = JSON.parse(fs.readFileSync(path.join(dir, "partner.json"), "utf8")) as { partner_id: string };
  const privateKey = createPrivateKey(fs.readFileSync(path.join(dir, "private-key.pem"), "utf8"));
  return { partnerId: info.partner_id, privateKey };
}

function assertLoopback(url: string): void {
  const host = new URL(url).hostname;
  if (host !== "127.0.0.1" && host !== "[::1]" && host !== "localhost") {
    throw new Error(`refusing to send load to a non-loopback address: ${url}`);
  }
}

/**
 * Starts a helper server script (e.g. bench/bare-server.ts) that prints {"port":N} on stdout once
 * it listens on 127.0.0.1; resolves with its child and origin URL.
 */
export async function startPortReporter(
  cleanup: Cleanup,
  name: string,
  args: string[],
  timeoutMs = 15_000,
): Promise<{ child: Child; url: string }> {
  let onPort: (port: number) => void = () => {};
  const port = new Promise<number>((resolve) => {
    onPort = resolve;
  });
  let seen = "";
  const child = spawnNode(cleanup, name, args, { ...process.env }, (stream, chunk) => {
    if (stream !== "stdout") return;
    seen += chunk;
    const m = /\{"port":(\d+)\}/.exec(seen);
    if (m) onPort(Number(m[1]));
  });
  const exitedEarly = child.exited.then(({ code, signal }) => {
    throw new Error(`${name} exited during start (code ${code}, signal ${signal}):\n${child.output.tail()}`);
  });
  const n = await withTimeout(Promise.race([port, exitedEarly]), timeoutMs, `${name}: waiting for its port`);
  exitedEarly.catch(() => {});
  return { child, url: `http://127.0.0.1:${n}` };
}

// ---------------------------------------------------------------------------------------------
// Requests

export interface RequestSpec {
  method: string;
  /** Path and raw query, exactly as sent. */
  path: string;
  headers?: Record<string, string>;
  /**
   * The body. A function is called for every request. For POST/PUT/PATCH/DELETE the service
   * refuses a signature it has seen before, and Ed25519 is deterministic, so two requests with
   * the same body signed within the same millisecond collide: give each request a unique body
   * (an idempotency key, a client reference) when signing state-changing requests under load.
   */
  body?: string | (() => string);
}

export function signedHeaders(
  partner: Partner,
  method: string,
  target: string,
  body?: string,
): Record<string, string> {
  return signRequest({
    partnerId: partner.partnerId,
    privateKey: partner.privateKey,
    method,
    target,
    body: body ?? "",
    nowMs: Date.now(),
  });
}

/** One request with fetch (signed when `partner` is given): status, headers and body bytes. */
export async function fetchOnce(
  baseUrl: string,
  spec: RequestSpec,
  partner?: Partner,
): Promise<{ status: number; headers: Headers; body: Buffer }> {
  assertLoopback(baseUrl);
  const body = typeof spec.body === "function" ? spec.body() : spec.body;
  const headers = {
    ...spec.headers,
    ...(partner ? signedHeaders(partner, spec.method, spec.path, body) : {}),
  };
  const response = await fetch(new URL(spec.path, baseUrl), {
    method: spec.method,
    headers,
    ...(body === undefined ? {} : { body }),
    signal: AbortSignal.timeout(10_000),
  });
  return {
    status: response.status,
    headers: response.headers,
    body: Buffer.from(await response.arrayBuffer()),
  };
}

/**
 * A signed deposit of 1 AED to `partnerClientId`, each request under a new reference that starts
 * with `refPrefix`.
 */
export function depositRequest(partnerClientId: string, refPrefix: string): RequestSpec {
  let n = 0;
  return {
    method: "POST",
    path: "/v1/partner/deposits",
    headers: { "content-type": "application/json" },
    body: () =>
      JSON.stringify({
        partner_client_id: partnerClientId,
        asset_id: "AED",
        amount: "1",
        partner_order_ref: `${refPrefix}-${++n}`,
      }),
  };
}

/**
 * Onboards a verified client through the signed API (POST /v1/partner/clients), `n` making its
 * identity unique; throws unless the answer is a 201.
 */
export async function onboardClient(
  baseUrl: string,
  partner: Partner,
  partnerClientId: string,
  n = 1,
): Promise<void> {
  const created = await fetchOnce(
    baseUrl,
    {
      method: "POST",
      path: "/v1/partner/clients",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(clientPayload(n, { partner_client_id: partnerClientId })),
    },
    partner,
  );
  if (created.status !== 201) throw new Error(`client create answered ${created.status}: ${created.body}`);
}

// ---------------------------------------------------------------------------------------------
// Load

export interface LoadOptions {
  /** Origin of the server, e.g. http://127.0.0.1:1234. */
  url: string;
  request: RequestSpec;
  /** Sign every request at send time with this partner (fresh X-Timestamp each time). */
  partner?: Partner;
  connections: number;
  durationS: number;
  /** Records every response's time (µs) here as well: a measure made of several runs. */
  alsoRecord?: RecordableHistogram;
}

export interface LoadRun {
  result: Result;
  /** Latency percentiles in ms from the exact per-response times (autocannon's own are whole ms). */
  latencyMs: { mean: number; p50: number; p90: number; p99: number; max: number };
  /** First non-2xx answer seen, to tell why. */
  firstNon2xx: { status: number; body: string } | null;
  wallMs: number;
}

/**
 * Runs autocannon in this process. Without `partner` the same request bytes are sent every time;
 * with it, `setupRequest` signs each request just before it is written.
 */
export function runLoad(options: LoadOptions): Promise<LoadRun> {
  assertLoopback(options.url);
  const { request, partner } = options;
  let firstNon2xx: LoadRun["firstNon2xx"] = null;
  const onResponse = (status: number, body: string) => {
    if ((status < 200 || status > 299) && firstNon2xx === null)
      firstNon2xx = { status, body: body.slice(0, 500) };
  };
  const dynamic = partner !== undefined || typeof request.body === "function";
  const staticBody = typeof request.body === "string" ? request.body : undefined;
  const acRequest: Request = {
    method: request.method as Request["method"],
    path: request.path,
    headers: { ...request.headers },
    ...(staticBody === undefined ? {} : { body: staticBody }),
    onResponse,
    ...(dynamic
      ? {
          setupRequest: (req: RequestParams): RequestParams => {
            const body = typeof request.body === "function" ? request.body() : staticBody;
            if (body !== undefined) req.body = body;
            if (partner !== undefined)
              req.headers = {
                ...req.headers,
                ...signedHeaders(partner, req.method ?? "GET", req.path ?? "/", body),
              };
            return req;
          },
        }
      : {}),
  };

  const histogram = createHistogram();
  const started = performance.now();
  const run = new Promise<LoadRun>((resolve, reject) => {
    const instance = autocannon(
      {
        url: options.url,
        connections: options.connections,
        duration: options.durationS,
        timeout: 10,
        requests: [acRequest],
      },
      (err, result) => {
        clearTimeout(guard);
        if (err) return reject(err);
        const ms = (microseconds: number) => microseconds / 1000;
        resolve({
          result,
          latencyMs: {
            mean: ms(histogram.mean),
            p50: ms(histogram.percentile(50)),
            p90: ms(histogram.percentile(90)),
            p99: ms(histogram.percentile(99)),
            max: ms(histogram.max),
          },
          firstNon2xx,
          wallMs: performance.now() - started,
        });
      },
    );
    instance.on("response", (_client: unknown, _status: number, _bytes: number, responseTimeMs: number) => {
      const us = Math.max(1, Math.round(responseTimeMs * 1000));
      histogram.record(us);
      options.alsoRecord?.record(us);
    });
    // autocannon stops itself after `duration`; this only catches a run that hangs.
    const guard = setTimeout(() => instance.stop(), (options.durationS + 30) * 1000);
  });
  return withTimeout(run, (options.durationS + 60) * 1000, `load on ${options.url}${request.path}`);
}

// ---------------------------------------------------------------------------------------------
// CPU

let clockTicks: number | null = null;

/** Clock ticks per second of /proc CPU times (`getconf CLK_TCK`, normally 100). */
export function clockTicksPerSecond(): number {
  if (clockTicks === null) {
    try {
      const n = Number(execFileSync("getconf", ["CLK_TCK"], { encoding: "utf8", timeout: 5_000 }).trim());
      clockTicks = Number.isInteger(n) && n > 0 ? n : 100;
    } catch {
      clockTicks = 100;
    }
  }
  return clockTicks;
}

/** User + system CPU time of a process (all its threads) so far, in clock ticks. */
export function cpuTicks(pid: number): number {
  const stat = fs.readFileSync(`/proc/${pid}/stat`, "utf8");
  // Fields after "(comm)", which may itself contain spaces: state is field 3, utime 14, stime 15.
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  const utime = Number(fields[14 - 3]);
  const stime = Number(fields[15 - 3]);
  if (!Number.isFinite(utime) || !Number.isFinite(stime))
    throw new Error(`unexpected /proc/${pid}/stat: ${stat}`);
  return utime + stime;
}

/** Busy CPU time of the whole host so far (all cores; idle and iowait excluded), in clock ticks. */
export function hostBusyTicks(): number {
  const line = fs.readFileSync("/proc/stat", "utf8").split("\n", 1)[0] ?? "";
  // cpu  user nice system idle iowait irq softirq steal guest guest_nice (guest is inside user)
  const [user, nice, system, , , irq, softirq, steal] = line.trim().split(/\s+/).slice(1).map(Number);
  return [user, nice, system, irq, softirq, steal].reduce<number>((sum, v) => sum + (v ?? 0), 0);
}

export interface TargetResult {
  label: string;
  url: string;
  method: string;
  path: string;
  signed: boolean;
  connections: number;
  durationS: number;
  requests: number;
  reqPerSecMean: number;
  latencyMs: LoadRun["latencyMs"];
  autocannonLatencyMs: { p50: number; p99: number; mean: number };
  non2xx: number;
  errors: number;
  timeouts: number;
  statusCodes: Record<string, number>;
  firstNon2xx: LoadRun["firstNon2xx"];
  warmup: { durationS: number; requests: number; non2xx: number; errors: number };
  serverCpuTicks: number;
  serverCpuUsPerRequest: number;
  /** Server CPU time over the wall time of the run, in % of one core. */
  serverCpuPercent: number;
  /** This (load generating) process's CPU over the run, in % of one core. */
  clientCpuPercent: number;
  /**
   * CPU the rest of the host used during the run (neither the server nor this process), in % of
   * one core: other load disturbs the figures.
   */
  otherCpuPercent: number;
  ok: boolean;
}

/**
 * A warm-up run, then the measured run with the server's CPU time read before and after it.
 * `ok` is false when any answer (warm-up included) was not 2xx, or connections failed.
 */
export async function measureTarget(options: {
  label: string;
  serverPid: number;
  load: LoadOptions;
  warmupS: number;
}): Promise<TargetResult> {
  const { load } = options;
  process.stdout.write(
    `bench: ${options.label}: warm-up ${options.warmupS} s, then ${load.durationS} s with ${load.connections} connections\n`,
  );
  const warm =
    options.warmupS > 0
      ? await runLoad({ ...load, durationS: options.warmupS, alsoRecord: undefined })
      : null;

  const hostBefore = hostBusyTicks();
  const selfBefore = cpuTicks(process.pid);
  const ticksBefore = cpuTicks(options.serverPid);
  const clientBefore = process.cpuUsage();
  const run = await runLoad(load);
  const clientCpu = process.cpuUsage(clientBefore);
  const ticksAfter = cpuTicks(options.serverPid);
  const selfTicks = cpuTicks(process.pid) - selfBefore;
  const hostTicks = hostBusyTicks() - hostBefore;

  const { result } = run;
  const ticks = ticksAfter - ticksBefore;
  const serverCpuS = ticks / clockTicksPerSecond();
  const requests = result.requests.total;
  const statusCodes = Object.fromEntries(
    Object.entries(result.statusCodeStats as Record<string, { count: number } | undefined>).map(([k, v]) => [
      k,
      v?.count ?? 0,
    ]),
  );
  const warmup = {
    durationS: options.warmupS,
    requests: warm?.result.requests.total ?? 0,
    non2xx: warm?.result.non2xx ?? 0,
    errors: warm?.result.errors ?? 0,
  };
  return {
    label: options.label,
    url: load.url,
    method: load.request.method,
    path: load.request.path,
    signed: load.partner !== undefined,
    connections: load.connections,
    durationS: result.duration,
    requests,
    reqPerSecMean: result.requests.average,
    latencyMs: run.latencyMs,
    autocannonLatencyMs: { p50: result.latency.p50, p99: result.latency.p99, mean: result.latency.average },
    non2xx: result.non2xx,
    errors: result.errors,
    timeouts: result.timeouts,
    statusCodes,
    firstNon2xx: run.firstNon2xx ?? warm?.firstNon2xx ?? null,
    warmup,
    serverCpuTicks: ticks,
    serverCpuUsPerRequest: requests > 0 ? (serverCpuS * 1e6) / requests : Number.NaN,
    serverCpuPercent: (serverCpuS * 1e3 * 100) / run.wallMs,
    clientCpuPercent: ((clientCpu.user + clientCpu.system) / 1e3 / run.wallMs) * 100,
    otherCpuPercent: Math.max(
      0,
      ((hostTicks - ticks - selfTicks) / clockTicksPerSecond()) * 1e3 * (100 / run.wallMs),
    ),
    ok:
      requests > 0 &&
      result.non2xx === 0 &&
      result.errors === 0 &&
      warmup.non2xx === 0 &&
      warmup.errors === 0,
  };
}

// ---------------------------------------------------------------------------------------------
// Output

/** The median of `xs` (the mean of the two middle values when their number is even). */
export function median(xs: readonly number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  if (s.length === 0) return Number.NaN;
  return s.length % 2 === 1 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
}

export function printTable(title: string, headers: string[], rows: string[][]): void {
  const widths = headers.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? "").length)));
  const line = (cells: string[]) =>
    cells.map((c, i) => (i === 0 ? c.padEnd(widths[i] ?? 0) : c.padStart(widths[i] ?? 0))).join("  ");
  const out = [title, line(headers), widths.map((w) => "-".repeat(w)).join("  "), ...rows.map(line)];
  process.stdout.write(`\n${out.join("\n")}\n`);
}

export function fixed(n: number, digits: number): string {
  return Number.isFinite(n) ? n.toFixed(digits) : "n/a";
}

/** The usual columns for a list of targets. */
export function printTargets(title: string, targets: TargetResult[]): void {
  printTable(
    title,
    [
      "target",
      "req/s",
      "p50 ms",
      "p99 ms",
      "srv CPU µs/req",
      "srv CPU %",
      "bench CPU %",
      "other CPU %",
      "non-2xx",
      "errors",
    ],
    targets.map((t) => [
      t.label,
      fixed(t.reqPerSecMean, 0),
      fixed(t.latencyMs.p50, 2),
      fixed(t.latencyMs.p99, 2),
      fixed(t.serverCpuUsPerRequest, 1),
      fixed(t.serverCpuPercent, 0),
      fixed(t.clientCpuPercent, 0),
      fixed(t.otherCpuPercent, 0),
      `${t.non2xx + t.warmup.non2xx}${t.non2xx + t.warmup.non2xx > 0 ? " !!" : ""}`,
      `${t.errors + t.warmup.errors}${t.errors + t.warmup.errors > 0 ? " !!" : ""}`,
    ]),
  );
}

/** Warnings about how far the figures of `targets` can be trusted. */
export function loadNotes(targets: TargetResult[]): string[] {
  const notes: string[] = [];
  const cores = os.availableParallelism();
  for (const t of targets) {
    if (t.clientCpuPercent > 90) {
      notes.push(
        `${t.label}: the bench process used ${t.clientCpuPercent.toFixed(0)}% of a core; the load generator may limit req/s`,
      );
    }
    if (t.otherCpuPercent > 20) {
      notes.push(
        `${t.label}: other processes used ${t.otherCpuPercent.toFixed(0)}% of a core during the run; figures are disturbed`,
      );
    }
    const busy = t.serverCpuPercent + t.clientCpuPercent + t.otherCpuPercent;
    if (busy > cores * 100 * 0.9) {
      notes.push(
        `${t.label}: the host's ${cores} cores were ${((busy / (cores * 100)) * 100).toFixed(0)}% busy; server and load generator competed for CPU`,
      );
    }
  }
  return notes;
}

/** Host facts worth keeping next to the figures. */
export function environmentInfo(): Record<string, unknown> {
  let commit: string | null = null;
  try {
    commit = execFileSync("git", ["rev-parse", "HEAD"], {
      cwd: repoRoot,
      encoding: "utf8",
      timeout: 5_000,
    }).trim();
  } catch {
    commit = null;
  }
  return {
    node: process.version,
    platform: `${os.type()} ${os.release()} ${os.arch()}`,
    cpus: os.cpus().length,
    cpu_model: os.cpus()[0]?.model ?? null,
    loadavg_at_start: os.loadavg(),
    clk_tck: clockTicksPerSecond(),
    git_commit: commit,
    signature_verifier: process.env.BENCH_SIGNATURE_VERIFIER || "auto",
  };
}

/** Writes bench/results/latest-<name>.json. */
export function writeResults(name: string, data: unknown): string {
  fs.mkdirSync(resultsDir, { recursive: true });
  const file = path.join(resultsDir, `latest-${name}.json`);
  fs.writeFileSync(file, `${JSON.stringify(data, null, 2)}\n`);
  return file;
}

// ---------------------------------------------------------------------------------------------
// Scenarios

export interface ScenarioContext {
  /** Stops what the scenario starts; run.ts runs it after the scenario, whatever happened. */
  cleanup: Cleanup;
  /** A fresh temporary directory for this scenario, removed afterwards. */
  scratchDir: string;
  durationS: number;
  warmupS: number;
  connections: number;
}

export interface ScenarioReport {
  name: string;
  /** False when a target had non-2xx answers or failed connections, or the scenario says so. */
  ok: boolean;
  targets: TargetResult[];
  ratios: Record<string, number>;
  /** Warnings and errors the servers logged while the scenario ran. */
  serverProblems: Record<string, string[]>;
  notes: string[];
  [extra: string]: unknown;
}

export interface Scenario {
  name: string;
  description: string;
  /** The scenario's share of the whole run's time bound, in seconds, when the default is too short. */
  budgetS?: number;
  run(ctx: ScenarioContext): Promise<ScenarioReport>;
}
