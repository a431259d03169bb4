// A throwaway PostgreSQL cluster for fault tests: its own data folder, its own port, started and
// stopped by the test, so restarting or crashing it disturbs nothing else on the machine. The
// server binaries come from the machine's PostgreSQL install (PG_BIN, or the newest version under
// /usr/lib/postgresql). PostgreSQL refuses to run as root; as root the cluster runs as `postgres`.

import { execFile, spawnSync } from "node:child_process";
import fs from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import pg from "pg";

export interface PgCluster {
  readonly port: number;
  readonly dataDir: string;
  /** A URL of the `postgres` database as superuser `postgres` (trust authentication). */
  readonly url: string;
  /** The URL of another database of this cluster. */
  urlOf(database: string): string;
  /** Creates a database and returns its URL. */
  createDatabase(name: string): Promise<string>;
  /** `pg_ctl restart -m immediate`: a crash restart (no checkpoint; WAL replay on start). */
  crashRestart(): Promise<void>;
  /** Stops the server with `-m immediate` and leaves it down until `start()`. */
  crash(): Promise<void>;
  start(): Promise<void>;
  /**
   * SIGSTOPs the server and every process of it: it accepts TCP connections (the kernel does) but
   * answers nothing, as a hung server or a network black hole would. `thaw()` resumes it.
   */
  freeze(): void;
  thaw(): void;
  /** Terminates every backend of `database` (or of every database but this helper's), returns how many. */
  terminateBackends(database?: string): Promise<number>;
  /** Stops the server and removes its folder. */
  destroy(): Promise<void>;
}

function pgBin(): string {
  if (process.env.PG_BIN) return process.env.PG_BIN;
  const base = "/usr/lib/postgresql";
  const versions = fs.existsSync(base)
    ? fs
        .readdirSync(base)
        .filter((v) => fs.existsSync(path.join(base, v, "bin", "pg_ctl")))
        .sort((a, b) => Number(b) - Number(a))
    : [];
  if (versions.length === 0) throw new Error("no PostgreSQL server binaries found (set PG_BIN)");
  return path.join(base, versions[0]!, "bin");
}

/** Whether this machine can start a cluster of its own (server binaries present). */
export function canStartCluster(): boolean {
  try {
    pgBin();
    return true;
  } catch {
    return false;
  }
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.unref();
    server.on("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      const port = typeof address === "object" && address !== null ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

const asRoot = process.getuid?.() === 0;

/**
 * Runs a server binary, as `postgres` when this process is root. Asynchronous, so that a test's
 * traffic keeps flowing while the server stops and starts.
 */
function run(bin: string, args: string[], timeoutMs = 60_000): Promise<string> {
  const file = asRoot ? "runuser" : bin;
  const argv = asRoot ? ["-u", "postgres", "--", bin, ...args] : args;
  return new Promise((resolve, reject) => {
    execFile(file, argv, { encoding: "utf8", timeout: timeoutMs }, (err, stdout, stderr) => {
      if (err) reject(new Error(`${path.basename(bin)} failed: ${err.message}\n${stderr}`));
      else resolve(stdout);
    });
  });
}

export async function startPgCluster(
  options: { settings?: Record<string, string> } = {},
): Promise<PgCluster> {
  const bin = pgBin();
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "cp-pg-"));
  if (asRoot) {
    const pw = spawnSync("id", ["-u", "postgres"], { encoding: "utf8" });
    const gw = spawnSync("id", ["-g", "postgres"], { encoding: "utf8" });
    fs.chownSync(dataDir, Number(pw.stdout.trim()), Number(gw.stdout.trim()));
  }
  fs.chmodSync(dataDir, 0o700);
  await run(path.join(bin, "initdb"), [
    "-D",
    dataDir,
    "-U",
    "postgres",
    "-A",
    "trust",
    "--no-sync",
    "-E",
    "UTF8",
  ]);
  const port = await freePort();
  const settings: Record<string, string> = {
    port: String(port),
    listen_addresses: "'127.0.0.1'",
    unix_socket_directories: `'${dataDir}'`,
    max_connections: "200",
    shared_buffers: "64MB",
    ...options.settings,
  };
  fs.appendFileSync(
    path.join(dataDir, "postgresql.conf"),
    `\n${Object.entries(settings)
      .map(([k, v]) => `${k} = ${v}`)
      .join("\n")}\n`,
  );
  const logFile = path.join(dataDir, "server.log");
  const url = `postgres://postgres@127.0.0.1:${port}/postgres`;
  const ctl = (args: string[]) => run(path.join(bin, "pg_ctl"), ["-D", dataDir, ...args]);

  async function waitReady(): Promise<void> {
    const deadline = Date.now() + 30_000;
    for (;;) {
      const c = new pg.Client({ connectionString: url, connectionTimeoutMillis: 1_000 });
      c.on("error", () => {});
      try {
        await c.connect();
        await c.query("SELECT 1");
        await c.end();
        return;
      } catch {
        await c.end().catch(() => {});
        if (Date.now() > deadline) throw new Error(`throwaway PostgreSQL did not answer on port ${port}`);
        await sleep(100);
      }
    }
  }

  async function start(): Promise<void> {
    await ctl(["-l", logFile, "-w", "-t", "30", "start"]);
    await waitReady();
  }

  async function query<T extends pg.QueryResultRow>(text: string, values: unknown[] = []): Promise<T[]> {
    const c = new pg.Client({ connectionString: url, connectionTimeoutMillis: 5_000 });
    c.on("error", () => {});
    await c.connect();
    try {
      return (await c.query<T>(text, values)).rows;
    } finally {
      await c.end().catch(() => {});
    }
  }

  /** The postmaster and its children (backends and auxiliary processes). */
  function serverPids(): number[] {
    const pidFile = path.join(dataDir, "postmaster.pid");
    if (!fs.existsSync(pidFile)) return [];
    const postmaster = Number(fs.readFileSync(pidFile, "utf8").split("\n")[0]);
    if (!Number.isInteger(postmaster) || postmaster <= 0) return [];
    const pids = [postmaster];
    for (const entry of fs.readdirSync("/proc")) {
      if (!/^[0-9]+$/.test(entry)) continue;
      try {
        const status = fs.readFileSync(`/proc/${entry}/status`, "utf8");
        if (new RegExp(`^PPid:\\s+${postmaster}$`, "m").test(status)) pids.push(Number(entry));
      } catch {
        // Gone meanwhile.
      }
    }
    return pids;
  }

  function signalAll(signal: NodeJS.Signals): void {
    for (const pid of serverPids()) {
      try {
        process.kill(pid, signal);
      } catch {
        // Gone meanwhile.
      }
    }
  }

  await start();
  let destroyed = false;
  const urlOf = (database: string) => `postgres://postgres@127.0.0.1:${port}/${database}`;
  return {
    port,
    dataDir,
    url,
    urlOf,
    async createDatabase(name) {
      if (!/^[a-z_][a-z0-9_]*$/.test(name)) throw new Error(`bad database name ${name}`);
      await query(`CREATE DATABASE ${name}`);
      return urlOf(name);
    },
    async crashRestart() {
      await ctl(["-m", "immediate", "-w", "-t", "30", "stop"]);
      await start();
    },
    async crash() {
      await ctl(["-m", "immediate", "-w", "-t", "30", "stop"]);
    },
    start,
    freeze: () => signalAll("SIGSTOP"),
    thaw: () => signalAll("SIGCONT"),
    async terminateBackends(database) {
      const rows = await query<{ n: string }>(
        `SELECT count(pg_terminate_backend(pid))::text AS n FROM pg_stat_activity
          WHERE pid <> pg_backend_pid() AND backend_type = 'client backend'
            AND ($1::text IS NULL OR datname = $1::text)`,
        [database ?? null],
      );
      return Number(rows[0]?.n ?? 0);
    },
    async destroy() {
      if (destroyed) return;
      destroyed = true;
      signalAll("SIGCONT");
      try {
        await ctl(["-m", "immediate", "-w", "-t", "30", "stop"]);
      } catch {
        // Already down.
      }
      fs.rmSync(dataDir, { recursive: true, force: true });
    },
  };
}
