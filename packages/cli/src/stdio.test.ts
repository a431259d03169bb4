// A reader that goes away before the CLI has written its output (`counterpart --help | true`)
// must not end it with an unhandled EPIPE and a stack trace: both entry points finish with their
// own exit code.

import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import path from "node:path";
import { test } from "node:test";

const entries = ["main.ts", "partner/main.ts"];

async function runWithClosedStdout(entry: string): Promise<{ code: number | null; stderr: string }> {
  const child = spawn(process.execPath, [path.join(import.meta.dirname, entry), "--help"], {
    stdio: ["ignore", "pipe", "pipe"],
  });
  // The read end is closed before the child writes anything: its first write fails with EPIPE.
  child.stdout.destroy();
  let stderr = "";
  child.stderr.on("data", (c: Buffer) => (stderr += c.toString()));
  const timer = setTimeout(() => child.kill("SIGKILL"), 30_000);
  try {
    const code = await new Promise<number | null>((resolve) => child.once("exit", (c) => resolve(c)));
    return { code, stderr };
  } finally {
    clearTimeout(timer);
  }
}

for (const entry of entries) {
  test(`${entry}: output to a closed pipe is dropped, not a crash`, async () => {
    const { code, stderr } = await runWithClosedStdout(entry);
    assert.equal(code, 0, stderr);
    assert.doesNotMatch(stderr, /EPIPE|\n\s+at /);
  });
}
