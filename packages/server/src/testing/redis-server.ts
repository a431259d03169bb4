// A throwaway redis-server for tests: on a free port of 127.0.0.1, nothing saved to disk, stopped
// by the test that started it. Never the machine's own Redis on 6379.

import { type ChildProcess, spawn } from "node:child_process";
import net from "node:net";

export interface TestRedis {
  readonly port: number;
  readonly url: string;
  /** Kills it at once (SIGKILL): Redis going away under traffic. */
  kill(): Promise<void>;
  /** Starts it again on the same port (after kill). */
  restart(): Promise<void>;
  stop(): Promise<void>;
}

/** A port free on 127.0.0.1 now (the kernel's pick, released at once). */
async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address() as net.AddressInfo;
      server.close(() => resolve(address.port));
    });
  });
}

/** Spawns redis-server and resolves once it says it accepts connections (bounded). */
function spawnRedis(port: number, timeoutMs: number): Promise<ChildProcess> {
  const child = spawn(
    "redis-server",
    ["--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
    { stdio: ["ignore", "pipe", "pipe"] },
  );
  return new Promise((resolve, reject) => {
    let out = "";
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error(`redis-server did not start within ${timeoutMs} ms:\n${out}`));
    }, timeoutMs);
    child.on("error", (err) => {
      clearTimeout(timer);
      reject(err);
    });
    const onExit = (code: number | null) => {
      clearTimeout(timer);
      reject(new Error(`redis-server exited with ${code}:\n${out}`));
    };
    child.on("exit", onExit);
    child.stdout?.on("data", (chunk: Buffer) => {
      out += chunk.toString();
      if (out.includes("Ready to accept connections")) {
        clearTimeout(timer);
        child.off("exit", onExit);
        resolve(child);
      }
    });
    child.stderr?.on("data", (chunk: Buffer) => (out += chunk.toString()));
  });
}

function exited(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => child.once("exit", () => resolve()));
}

export async function startTestRedis(timeoutMs = 20_000): Promise<TestRedis> {
  const port = await freePort();
  let child: ChildProcess | null = await spawnRedis(port, timeoutMs);
  const end = async (signal: NodeJS.Signals) => {
    const c = child;
    child = null;
    if (c === null) return;
    const gone = exited(c);
    c.kill(signal);
    await gone;
  };
  return {
    port,
    url: `redis://127.0.0.1:${port}`,
    kill: () => end("SIGKILL"),
    async restart() {
      if (child === null) child = await spawnRedis(port, timeoutMs);
    },
    stop: () => end("SIGTERM"),
  };
}
