// CPU of groups of processes, read from /proc: a process tree (the service and its workers) and a
// database's backends (which a connection pool opens and closes while the load runs).

import crypto from "node:crypto";
import fs from "node:fs";
import pg from "pg";
import { type Cleanup, cpuTicks } from "./lib.ts";

export function intFromEnv(name: string, fallback: number, min: number, max: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === "") return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < min || n > max) {
    throw new Error(`${name}: expected an integer from ${min} to ${max}, got "${raw}"`);
  }
  return n;
}

/** Every process /proc shows: parent and title (cmdline, NULs as spaces). */
export function processTable(): { pid: number; ppid: number; title: string }[] {
  const out: { pid: number; ppid: number; title: string }[] = [];
  for (const entry of fs.readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = fs.readFileSync(`/proc/${entry}/stat`, "utf8");
      const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
      const title = fs.readFileSync(`/proc/${entry}/cmdline`, "utf8").replaceAll("\0", " ").trim();
      out.push({ pid: Number(entry), ppid, title });
    } catch {
      // exited meanwhile
    }
  }
  return out;
}

/** `root` and all its descendants. */
export function processTree(root: number): number[] {
  const children = new Map<number, number[]>();
  for (const p of processTable()) children.set(p.ppid, [...(children.get(p.ppid) ?? []), p.pid]);
  const out: number[] = [];
  const queue = [root];
  for (let pid = queue.shift(); pid !== undefined; pid = queue.shift()) {
    out.push(pid);
    queue.push(...(children.get(pid) ?? []));
  }
  return out;
}

/**
 * PostgreSQL backends connected to `dbName`: their titles read "postgres: [cluster: ]user db
 * host(port) state" (Debian sets cluster_name, e.g. "15/main").
 */
export function backendsOf(dbName: string): number[] {
  const title = new RegExp(`^postgres: (?:\\S+: )?\\S+ ${dbName} `);
  return processTable()
    .filter((p) => title.test(p.title))
    .map((p) => p.pid);
}

export function ticksOf(pids: readonly number[]): Map<number, number> {
  const out = new Map<number, number>();
  for (const pid of pids) {
    try {
      out.set(pid, cpuTicks(pid));
    } catch {
      // exited
    }
  }
  return out;
}

/**
 * CPU ticks of a changing set of processes over a window, sampled every 100 ms: a process that
 * appears counts from zero, one that exits loses at most its last 100 ms.
 */
export class CpuSampler {
  readonly #select: () => number[];
  #base = new Map<number, number>();
  readonly #last = new Map<number, number>();
  readonly #present = new Set<number>();
  #timer: NodeJS.Timeout | null = null;
  #seen = 0;

  constructor(select: () => number[]) {
    this.#select = select;
  }

  start(): void {
    this.#base = ticksOf(this.#select());
    this.#last.clear();
    for (const [pid, t] of this.#base) this.#last.set(pid, t);
    this.#timer = setInterval(() => this.#sample(), 100);
  }

  #sample(): void {
    const now = ticksOf(this.#select());
    this.#present.clear();
    for (const [pid, t] of now) {
      this.#last.set(pid, t);
      this.#present.add(pid);
    }
    this.#seen = Math.max(this.#seen, this.#last.size);
  }

  /** Ticks used since start, how many processes took part, and how many exited meanwhile. */
  stop(): { ticks: number; processes: number; gone: number } {
    this.#sample();
    if (this.#timer !== null) clearInterval(this.#timer);
    this.#timer = null;
    let ticks = 0;
    for (const [pid, t] of this.#last) ticks += t - (this.#base.get(pid) ?? 0);
    const gone = [...this.#last.keys()].filter((pid) => !this.#present.has(pid)).length;
    return { ticks, processes: this.#seen, gone };
  }
}

/**
 * A database of its own on the local PostgreSQL (BENCH_DATABASE_URL names the server), dropped by
 * `cleanup` whatever happens.
 */
export async function freshBenchDatabase(cleanup: Cleanup): Promise<{ dbName: string; databaseUrl: string }> {
  const serverUrl = process.env.BENCH_DATABASE_URL || "postgres://postgres@127.0.0.1:5432/postgres";
  const dbName = `counterpart_bench_${Date.now()}_${crypto.randomBytes(3).toString("hex")}`;
  const admin = new pg.Client({ connectionString: serverUrl });
  try {
    await admin.connect();
  } catch (err) {
    throw new Error(`cannot reach PostgreSQL at ${serverUrl}: ${(err as Error).message}`);
  }
  try {
    await admin.query(`CREATE DATABASE ${dbName}`);
  } finally {
    await admin.end();
  }
  cleanup.add(`drop database ${dbName}`, async () => {
    const c = new pg.Client({ connectionString: serverUrl });
    await c.connect();
    try {
      await c.query(`DROP DATABASE IF EXISTS ${dbName} WITH (FORCE)`);
    } finally {
      await c.end();
    }
  });
  const url = new URL(serverUrl);
  url.pathname = `/${dbName}`;
  return { dbName, databaseUrl: url.toString() };
}
