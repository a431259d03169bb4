// Test helpers for the CLI as an operator runs it: a sandbox started with `serve` on a fresh data
// folder (ephemeral ports) in a child process, and the CLI run as child processes beside it, with
// checks on output, exit codes and the one-line errors.

import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import fs from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import type { TestContext } from "node:test";

export const root = path.resolve(import.meta.dirname, "../../..");
const mainTs = path.join(root, "packages/cli/src/main.ts");
const partnerMainTs = path.join(root, "packages/cli/src/partner/main.ts");
const demoTs = path.join(root, "scripts/demo.ts");

export interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** The environment of an operator's shell beside the sandbox: nothing inherited that would steer the CLI. */
export function baseEnv(dataDir: string, extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env };
  for (const name of Object.keys(env)) {
    if (/^(COUNTERPART_|NODE_TEST|NODE_OPTIONS$)/.test(name)) delete env[name];
  }
  for (const name of [
    "DATABASE_URL",
    "TEST_DATABASE_URL",
    "ADMIN_TOKEN",
    "WORKERS",
    "PORT",
    "ADMIN_PORT",
    "HOST",
  ]) {
    delete env[name];
  }
  return { ...env, DATA_DIR: dataDir, ...extra };
}

/** `input`, when given, is written to the command's standard input (closed otherwise). */
export function runCli(args: string[], env: NodeJS.ProcessEnv, input?: string): Promise<Run> {
  return runScript(mainTs, args, env, input);
}

/** The published partner CLI (partner/main.ts), as `npx counterpart` runs it. */
export function runPartnerCli(args: string[], env: NodeJS.ProcessEnv, input?: string): Promise<Run> {
  return runScript(partnerMainTs, args, env, input);
}

/** `npm run demo` (scripts/demo.ts) as a child process. */
export function runDemo(env: NodeJS.ProcessEnv): Promise<Run> {
  return runScript(demoTs, [], env);
}

function runScript(script: string, args: string[], env: NodeJS.ProcessEnv, input?: string): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [script, ...args], {
      cwd: root,
      env,
      stdio: ["pipe", "pipe", "pipe"],
    });
    // Standard input is closed at once when there is nothing to write: the command reads an end.
    child.stdin.on("error", () => {});
    child.stdin.end(input ?? "");
    let stdout = "";
    let stderr = "";
    child.stdout.setEncoding("utf8").on("data", (d: string) => {
      stdout += d;
    });
    child.stderr.setEncoding("utf8").on("data", (d: string) => {
      stderr += d;
    });
    // Generous: a fresh PGlite folder runs initdb, which is slow on a loaded 2-core machine.
    const timer = setTimeout(() => child.kill("SIGKILL"), 60_000);
    child.on("error", reject);
    child.on("close", (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

export function json(r: Run): Record<string, unknown> {
  try {
    return JSON.parse(r.stdout) as Record<string, unknown>;
  } catch {
    assert.fail(`stdout is not one JSON object (exit ${r.code}):\n${r.stdout}\nstderr:\n${r.stderr}`);
  }
}

export function assertOk(r: Run): void {
  assert.equal(r.code, 0, `exit ${r.code}\nstdout: ${r.stdout}\nstderr: ${r.stderr}`);
}

/** Exit `code` with exactly one "counterpart: ..." line on stderr matching `pattern`, no stack. */
export function assertFails(r: Run, code: 1 | 2, pattern: RegExp): void {
  assert.equal(
    r.code,
    code,
    `expected exit ${code}, got ${r.code}\nstdout: ${r.stdout}\nstderr: ${r.stderr}`,
  );
  const lines = r.stderr.split("\n").filter((l) => l !== "");
  assert.equal(lines.length, 1, `expected one stderr line, got:\n${r.stderr}`);
  assert.match(lines[0]!, /^counterpart: /);
  assert.match(lines[0]!, pattern);
  assert.doesNotMatch(r.stderr + r.stdout, /\n\s+at /, "no stack trace");
}

async function waitForEndpoints(
  file: string,
  exited: () => boolean,
  log: () => string,
): Promise<{ partner_url: string; admin_url: string }> {
  // Generous, as runCli: a fresh PGlite folder runs initdb, which is slow on a loaded 2-core machine.
  const deadline = Date.now() + 60_000;
  while (Date.now() < deadline) {
    if (exited()) assert.fail(`the sandbox exited during start-up:\n${log()}`);
    try {
      const e = JSON.parse(fs.readFileSync(file, "utf8")) as { partner_url?: unknown; admin_url?: unknown };
      if (typeof e.partner_url === "string" && typeof e.admin_url === "string") {
        return { partner_url: e.partner_url, admin_url: e.admin_url };
      }
    } catch {
      // not written yet
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  assert.fail(`no endpoints.json with both URLs within 60 s:\n${log()}`);
}

/** A port on which nothing listens (bound, then released). */
export async function closedPort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", resolve);
  });
  const port = (server.address() as net.AddressInfo).port;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

export interface Sandbox {
  /** A temporary folder for the test's own files; removed with the sandbox. */
  tmp: string;
  /** The sandbox's data folder (endpoints.json, admin-token, demo-partner/). */
  dataDir: string;
  /** The environment to run the CLI in beside the sandbox. */
  env: NodeJS.ProcessEnv;
  endpoints: { partner_url: string; admin_url: string };
  demo: { partner_id: string };
  /** What the sandbox printed so far (stdout and stderr), for failure messages. */
  log: () => string;
}

export interface SandboxOptions {
  /** The price feed: manual (default; prices stay as seeded) or simulated (prices move every second). */
  priceFeed?: "manual" | "simulated";
  /** More of the service's configuration, e.g. PRICE_STALE_AFTER_S. */
  env?: Record<string, string>;
}

/**
 * Starts `counterpart serve` on a fresh data folder (ephemeral ports, manual price feed unless
 * `options` say otherwise) and waits until it is listening. After the test it is stopped with
 * SIGTERM, must exit 0, and its folder is removed.
 */
export async function startSandbox(
  t: TestContext,
  prefix: string,
  options: SandboxOptions = {},
): Promise<Sandbox> {
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  const dataDir = path.join(tmp, "data");

  let serveLog = "";
  const sandbox = spawn(process.execPath, [mainTs, "serve"], {
    cwd: root,
    env: baseEnv(dataDir, {
      PORT: "0",
      ADMIN_PORT: "0",
      PRICE_FEED: options.priceFeed ?? "manual",
      LOG_LEVEL: "warn",
      ...options.env,
    }),
    stdio: ["ignore", "pipe", "pipe"],
  });
  sandbox.on("error", (err) => {
    serveLog += `\nspawn error: ${err.message}\n`;
  });
  sandbox.stdout.setEncoding("utf8").on("data", (d: string) => {
    serveLog += d;
  });
  sandbox.stderr.setEncoding("utf8").on("data", (d: string) => {
    serveLog += d;
  });
  let exitCode: number | null | undefined;
  let exitSignal: NodeJS.Signals | null = null;
  const exited = new Promise<void>((resolve) =>
    sandbox.on("exit", (code, signal) => {
      exitCode = code;
      exitSignal = signal;
      resolve();
    }),
  );

  let started = false;
  t.after(async () => {
    try {
      if (exitCode === undefined) {
        // A sandbox that never finished starting is only stopped; one that did must stop cleanly.
        sandbox.kill(started ? "SIGTERM" : "SIGKILL");
        const timer = setTimeout(() => sandbox.kill("SIGKILL"), 10_000);
        await exited;
        clearTimeout(timer);
        if (started) {
          assert.equal(exitSignal, null, `the sandbox died of ${exitSignal}:\n${serveLog}`);
          assert.equal(exitCode, 0, `the sandbox exited ${exitCode} on SIGTERM:\n${serveLog}`);
        }
      }
    } finally {
      fs.rmSync(tmp, { recursive: true, force: true });
    }
  });

  const endpoints = await waitForEndpoints(
    path.join(dataDir, "endpoints.json"),
    () => exitCode !== undefined,
    () => serveLog,
  );
  started = true;
  const demo = JSON.parse(fs.readFileSync(path.join(dataDir, "demo-partner/partner.json"), "utf8")) as {
    partner_id: string;
  };
  return { tmp, dataDir, env: baseEnv(dataDir), endpoints, demo, log: () => serveLog };
}
