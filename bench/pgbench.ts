// pgbench, run by the benchmarks: finding the binary, one timed run with the CPU its database
// backends used, and the parsing of its report.

import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { type Cleanup, hostBusyTicks, withTimeout } from "./lib.ts";
import { backendsOf, CpuSampler } from "./proc.ts";

export function findPgbench(): string {
  const given = process.env.BENCH_PGBENCH;
  if (given) return given;
  try {
    const onPath = execFileSync("sh", ["-c", "command -v pgbench"], {
      encoding: "utf8",
      timeout: 5_000,
    }).trim();
    if (onPath !== "") return onPath;
  } catch {
    // not on PATH
  }
  const root = "/usr/lib/postgresql";
  const versions = fs.existsSync(root) ? fs.readdirSync(root).sort((a, b) => Number(b) - Number(a)) : [];
  for (const v of versions) {
    const candidate = path.join(root, v, "bin", "pgbench");
    if (fs.existsSync(candidate)) return candidate;
  }
  throw new Error("pgbench not found (set BENCH_PGBENCH, or install postgresql-client / postgresql-contrib)");
}

// ---------------------------------------------------------------------------------------------
// pgbench

export async function runCommand(
  cleanup: Cleanup,
  file: string,
  args: string[],
  timeoutMs: number,
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child: ChildProcess = spawn(file, args, { stdio: ["ignore", "pipe", "pipe"] });
  cleanup.add(`stop ${path.basename(file)}`, () => {
    if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
  });
  let stdout = "";
  let stderr = "";
  child.stdout?.on("data", (c: Buffer) => (stdout += c.toString()));
  child.stderr?.on("data", (c: Buffer) => (stderr += c.toString()));
  const done = new Promise<number | null>((resolve, reject) => {
    child.once("error", reject);
    child.once("close", (code) => resolve(code));
  });
  try {
    const code = await withTimeout(done, timeoutMs, `${path.basename(file)} ${args.join(" ")}`);
    return { code, stdout, stderr };
  } catch (err) {
    child.kill("SIGKILL");
    throw err;
  }
}

export interface PgbenchResult {
  tps: number;
  transactions: number;
  failed: number;
  latencyAvgMs: number | null;
  output: string;
  wallMs: number;
  pgCpuTicks: number;
  pgBackends: number;
  pgbenchCpuTicks: number;
  hostBusyTicks: number;
}

/** Children's CPU time so far (reaped children only: utime + stime of those waited for). */
function reapedChildrenTicks(): number {
  const stat = fs.readFileSync("/proc/self/stat", "utf8");
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return Number(fields[16 - 3]) + Number(fields[17 - 3]);
}

/**
 * One pgbench run of `durationS` seconds with `clients` connections on database `dbName` at `url`:
 * TPC-B with prepared statements by default, or `script` (a file) in the given `protocol`.
 */
export async function pgbenchRun(
  cleanup: Cleanup,
  pgbench: string,
  url: string,
  dbName: string,
  clients: number,
  durationS: number,
  options: { script?: string; protocol?: "prepared" | "simple" | "extended" } = {},
): Promise<PgbenchResult> {
  const threads = Math.min(2, clients);
  const args = [
    "-c",
    String(clients),
    "-j",
    String(threads),
    "-T",
    String(durationS),
    "-M",
    options.protocol ?? "prepared",
    "-n",
    ...(options.script === undefined ? [] : ["-f", options.script]),
    url,
  ];
  const sampler = new CpuSampler(() => backendsOf(dbName));
  const childrenBefore = reapedChildrenTicks();
  const hostBefore = hostBusyTicks();
  sampler.start();
  const started = performance.now();
  const r = await runCommand(cleanup, pgbench, args, (durationS + 120) * 1000);
  const wallMs = performance.now() - started;
  const pgCpu = sampler.stop();
  const output = `${r.stdout}${r.stderr}`;
  if (r.code !== 0) throw new Error(`pgbench ${args.slice(0, -1).join(" ")} exited ${r.code}:\n${output}`);
  // PostgreSQL 14+: "tps = N (without initial connection time)"; older: "(excluding connections establishing)".
  const tps =
    /tps = ([0-9.]+) \((?:without initial connection time|excluding connections establishing)\)/.exec(output);
  if (tps === null) throw new Error(`no tps in pgbench's output:\n${output}`);
  const processed = /number of transactions actually processed: (\d+)/.exec(output);
  const failed = /number of failed transactions: (\d+)/.exec(output);
  const latency = /latency average = ([0-9.]+) ms/.exec(output);
  return {
    tps: Number(tps[1]),
    transactions: Number(processed?.[1] ?? Number.NaN),
    failed: Number(failed?.[1] ?? 0),
    latencyAvgMs: latency === null ? null : Number(latency[1]),
    output,
    wallMs,
    pgCpuTicks: pgCpu.ticks,
    pgBackends: pgCpu.processes,
    pgbenchCpuTicks: reapedChildrenTicks() - childrenBefore,
    hostBusyTicks: hostBusyTicks() - hostBefore,
  };
}
