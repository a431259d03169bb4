// The test command. `npm test` runs every test file on PGlite; `npm run test:pg` runs the same
// files on PostgreSQL (DATABASE_URL, default the local server), in a database created for the run
// and dropped after it.

import { spawnSync } from "node:child_process";
import crypto from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import pg from "pg";

const root = path.resolve(import.meta.dirname, "..");
const onPg = process.argv.includes("--pg");
const extra = process.argv.slice(2).filter((a) => a !== "--pg");

function testFiles(): string[] {
  if (extra.length > 0) return extra;
  const out: string[] = [];
  const walk = (dir: string) => {
    for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
      if (entry.name === "node_modules" || entry.name.startsWith(".")) continue;
      const full = path.join(dir, entry.name);
      if (entry.isDirectory()) walk(full);
      else if (entry.name.endsWith(".test.ts")) out.push(path.relative(root, full));
    }
  };
  walk(path.join(root, "packages"));
  if (fs.existsSync(path.join(root, "test"))) walk(path.join(root, "test"));
  return out.sort();
}

/**
 * No single test may wait longer than this: a test stuck on a child that never answers fails with
 * its name instead of holding the run until CI's own limit.
 */
const testTimeoutMs = 300_000;

function runTests(env: NodeJS.ProcessEnv): number {
  const files = testFiles();
  const r = spawnSync(
    process.execPath,
    ["--test", "--test-concurrency=2", `--test-timeout=${testTimeoutMs}`, ...files],
    {
      cwd: root,
      stdio: "inherit",
      env,
    },
  );
  return r.status ?? 1;
}

async function main(): Promise<number> {
  const env = { ...process.env };
  delete env.TEST_DATABASE_URL;
  if (!onPg) return runTests(env);

  const baseUrl = process.env.DATABASE_URL || "postgres://postgres@127.0.0.1:5432/postgres";
  const dbName = `counterpart_test_${Date.now()}_${crypto.randomBytes(3).toString("hex")}`;
  const admin = new pg.Client({ connectionString: baseUrl });
  try {
    await admin.connect();
  } catch (err) {
    process.stderr.write(`test:pg: cannot reach PostgreSQL at ${baseUrl}: ${(err as Error).message}\n`);
    return 1;
  }
  await admin.query(`CREATE DATABASE ${dbName}`);
  await admin.end();
  const url = new URL(baseUrl);
  url.pathname = `/${dbName}`;
  process.stdout.write(`test:pg: running on a fresh database ${dbName}\n`);
  try {
    return runTests({ ...env, TEST_DATABASE_URL: url.toString() });
  } finally {
    const c = new pg.Client({ connectionString: baseUrl });
    await c.connect();
    await c.query(`DROP DATABASE IF EXISTS ${dbName} WITH (FORCE)`);
    await c.end();
  }
}

process.exitCode = await main();
