// Runs the real `counterpart serve` in a child process for tests that need a process: signals,
// the PGlite folder lock, several workers, logs on stdout.

import { type ChildProcess, spawn } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { setTimeout as sleep } from "node:timers/promises";

const repoRoot = path.resolve(import.meta.dirname, "../../../..");
export const cliMain = path.join(repoRoot, "packages/cli/src/main.ts");

export interface ServiceProcess {
  child: ChildProcess;
  dataDir: string;
  partnerUrl: string;
  adminUrl: string | null;
  output(): string;
  /** SIGTERM, then the exit code (SIGKILL after the grace period). */
  stop(): Promise<number | null>;
}

/**
 * The Node options `npm start` gives the sandbox: what its script in the root package.json puts
 * between `node` and the CLI (`node <options> packages/cli/src/main.ts serve`).
 */
export function startScriptExecArgv(): string[] {
  const manifest = JSON.parse(fs.readFileSync(path.join(repoRoot, "package.json"), "utf8")) as {
    scripts: { start: string };
  };
  const words = manifest.scripts.start.trim().split(/\s+/);
  const cli = words.indexOf("packages/cli/src/main.ts");
  if (words[0] !== "node" || cli < 1 || words[cli + 1] !== "serve" || words.length !== cli + 2) {
    throw new Error(
      `npm start is not "node [options] packages/cli/src/main.ts serve": ${manifest.scripts.start}`,
    );
  }
  return words.slice(1, cli);
}

export function tempDataDir(): string {
  return fs.mkdtempSync(path.join(os.tmpdir(), "cp-data-"));
}

/** `counterpart serve` from the sources, with `execArgv` (Node's options) before the script. */
export function spawnServe(
  env: Record<string, string>,
  execArgv: readonly string[] = [],
): { child: ChildProcess; output: () => string } {
  const child = spawn(process.execPath, [...execArgv, cliMain, "serve"], {
    cwd: repoRoot,
    env: { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "", ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let out = "";
  // A child that cannot be spawned (or signalled) emits 'error'; recorded, never thrown.
  child.on("error", (err) => (out += `\nspawn error: ${err.message}\n`));
  child.stdout?.on("data", (c: Buffer) => (out += c.toString()));
  child.stderr?.on("data", (c: Buffer) => (out += c.toString()));
  return { child, output: () => out };
}

export function exitOf(child: ChildProcess): Promise<number | null> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve(child.exitCode);
  return new Promise((resolve) => {
    child.once("exit", (code) => resolve(code));
    // A child that never started emits 'error' and no 'exit'.
    child.once("error", () => resolve(child.exitCode));
  });
}

/**
 * Starts the service and waits (bounded, generously: a cold start on a loaded machine has taken
 * 30 s) until it has written its endpoints.
 */
export async function startService(
  env: Record<string, string>,
  timeoutMs = 120_000,
  execArgv: readonly string[] = [],
): Promise<ServiceProcess> {
  const dataDir = env.DATA_DIR ?? tempDataDir();
  const endpointsFile = path.join(dataDir, "endpoints.json");
  fs.rmSync(endpointsFile, { force: true });
  const { child, output } = spawnServe(
    {
      PORT: "0",
      ADMIN_PORT: "0",
      PRICE_FEED: "manual",
      ...env,
      DATA_DIR: dataDir,
    },
    execArgv,
  );
  const deadline = Date.now() + timeoutMs;
  while (!fs.existsSync(endpointsFile) || !output().includes("Counterpart is running")) {
    if (child.exitCode !== null) throw new Error(`service exited with ${child.exitCode}:\n${output()}`);
    if (Date.now() > deadline) {
      child.kill("SIGKILL");
      throw new Error(`service did not start in ${timeoutMs} ms:\n${output()}`);
    }
    await sleep(50);
  }
  const endpoints = JSON.parse(fs.readFileSync(endpointsFile, "utf8")) as {
    partner_url: string;
    admin_url: string | null;
  };
  return {
    child,
    dataDir,
    partnerUrl: endpoints.partner_url,
    adminUrl: endpoints.admin_url,
    output,
    async stop() {
      const exited = exitOf(child);
      child.kill("SIGTERM");
      const timer = setTimeout(() => child.kill("SIGKILL"), 15_000);
      try {
        return await exited;
      } finally {
        clearTimeout(timer);
      }
    },
  };
}
