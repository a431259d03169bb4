// How long an API process takes, from spawn, to answer /readyz 200 on a database whose schema is
// current (docs/operations.md, "Starting"): the bundle production runs (`npm run build:server`),
// the same entry from the TypeScript sources, and `counterpart serve` (the operator's CLI, from
// the sources), against a bare Fastify app started the same way as the reference. Rounds are
// interleaved so that the machine's load weighs on each alike; each start reports its wall time
// and the CPU time the process had used when it first answered (from /proc: steadier than wall
// time on a loaded machine).
//
// Environment: BENCH_DATABASE_URL (default postgres://postgres@127.0.0.1:5432/postgres; a database
// of its own is created and dropped), BENCH_STARTUP_ROUNDS (default 5).

import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import fs from "node:fs";
import net from "node:net";
import path from "node:path";
import pg from "pg";
import { repoRoot, type Scenario, type ScenarioReport, sleep } from "../lib.ts";

interface Target {
  label: string;
  /** node's arguments; the service's targets get the environment below. */
  args: string[];
  /** The bare reference prints its port; the others listen on the one given. */
  printsPort: boolean;
  path: string;
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

/** CPU milliseconds (user + system) the process has used; Linux's clock tick is 10 ms. */
function cpuMs(pid: number): number {
  const stat = fs.readFileSync(`/proc/${pid}/stat`, "utf8");
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return (Number(fields[11]) + Number(fields[12])) * 10;
}

function stop(child: ChildProcess): Promise<void> {
  return new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) return resolve();
    const timer = setTimeout(() => child.kill("SIGKILL"), 15_000);
    child.once("exit", () => {
      clearTimeout(timer);
      resolve();
    });
    child.kill("SIGTERM");
  });
}

async function startOnce(
  target: Target,
  env: Record<string, string>,
): Promise<{ wallMs: number; cpuMs: number }> {
  const port = await freePort();
  const started = performance.now();
  const child = spawn(process.execPath, target.args, {
    cwd: repoRoot,
    env: { PATH: process.env.PATH ?? "", ...env, PORT: String(port) },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let out = "";
  child.stdout?.on("data", (c: Buffer) => (out += c.toString()));
  child.stderr?.on("data", (c: Buffer) => (out += c.toString()));
  child.on("error", (err) => (out += `spawn error: ${err.message}`));
  try {
    const deadline = Date.now() + 60_000;
    for (;;) {
      if (child.exitCode !== null) throw new Error(`${target.label} exited: ${out.slice(-2000)}`);
      if (Date.now() > deadline)
        throw new Error(`${target.label} did not answer in 60 s: ${out.slice(-2000)}`);
      const printed = /\{"port":(\d+)\}/.exec(out)?.[1];
      const at = target.printsPort ? (printed === undefined ? null : Number(printed)) : port;
      if (at !== null) {
        const ok = await fetch(`http://127.0.0.1:${at}${target.path}`, {
          signal: AbortSignal.timeout(5_000),
        }).then(
          (r) => r.status === 200,
          () => false,
        );
        if (ok) return { wallMs: performance.now() - started, cpuMs: cpuMs(child.pid!) };
      }
      await sleep(10);
    }
  } finally {
    await stop(child);
  }
}

function summary(values: number[]): { median: number; min: number; max: number } {
  const sorted = [...values].sort((a, b) => a - b);
  return {
    median: Math.round(sorted[Math.floor(sorted.length / 2)]!),
    min: Math.round(sorted[0]!),
    max: Math.round(sorted.at(-1)!),
  };
}

export const startup: Scenario = {
  name: "startup",
  description: "spawn → /readyz 200 on a current schema: bundle, sources, counterpart serve, bare Fastify",

  async run(ctx): Promise<ScenarioReport> {
    const rounds = Number(process.env.BENCH_STARTUP_ROUNDS || 5);
    const baseUrl = process.env.BENCH_DATABASE_URL || "postgres://postgres@127.0.0.1:5432/postgres";
    execFileSync(process.execPath, [path.join(repoRoot, "scripts/build-server.ts")], {
      cwd: repoRoot,
      stdio: "ignore",
    });

    const name = `cp_bench_startup_${process.pid}`;
    const admin = new pg.Client({ connectionString: baseUrl });
    await admin.connect();
    await admin.query(`CREATE DATABASE ${name}`);
    await admin.end();
    ctx.cleanup.add(`drop database ${name}`, async () => {
      const c = new pg.Client({ connectionString: baseUrl });
      await c.connect();
      try {
        await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      } finally {
        await c.end();
      }
    });
    const url = new URL(baseUrl);
    url.pathname = `/${name}`;
    const env = {
      DATABASE_URL: url.toString(),
      ADMIN_PORT: "off",
      LOG_LEVEL: "warn",
      PRICE_FEED: "manual",
      DATA_DIR: ctx.scratchDir,
    };
    const bodyFile = path.join(ctx.scratchDir, "ok.json");
    fs.writeFileSync(bodyFile, '{"status":"ok"}');
    const targets: Target[] = [
      {
        label: "bare Fastify (reference)",
        args: ["bench/bare-server.ts", "/readyz", bodyFile],
        printsPort: true,
        path: "/readyz",
      },
      {
        label: "bundle (dist/server.js)",
        args: ["packages/server/dist/server.js"],
        printsPort: false,
        path: "/readyz",
      },
      {
        label: "sources (server-main.ts)",
        args: ["packages/server/src/server-main.ts"],
        printsPort: false,
        path: "/readyz",
      },
      {
        label: "counterpart serve",
        args: ["packages/cli/src/main.ts", "serve"],
        printsPort: false,
        path: "/readyz",
      },
    ];
    // The first start migrates the empty database; every measured start finds its schema current.
    await startOnce(targets[1]!, env);

    const results = new Map<string, { wall: number[]; cpu: number[] }>(
      targets.map((t) => [t.label, { wall: [], cpu: [] }]),
    );
    for (let round = 0; round < rounds; round++) {
      for (const target of targets) {
        const r = await startOnce(target, env);
        results.get(target.label)!.wall.push(r.wallMs);
        results.get(target.label)!.cpu.push(r.cpuMs);
      }
    }
    const table = targets.map((t) => {
      const r = results.get(t.label)!;
      return { target: t.label, wall_ms: summary(r.wall), cpu_ms: summary(r.cpu) };
    });
    process.stdout.write(
      `\n${"target".padEnd(28)}${"wall ms: median (min-max)".padEnd(30)}cpu ms: median (min-max)\n`,
    );
    for (const row of table) {
      const w = row.wall_ms;
      const c = row.cpu_ms;
      process.stdout.write(
        `${row.target.padEnd(28)}${`${w.median} (${w.min}-${w.max})`.padEnd(30)}${c.median} (${c.min}-${c.max})\n`,
      );
    }
    return {
      name: "startup",
      ok: true,
      targets: [],
      ratios: {},
      serverProblems: {},
      notes: [`${rounds} interleaved rounds; wall time depends on the machine's load, CPU time much less`],
      startup: table,
    };
  },
};
