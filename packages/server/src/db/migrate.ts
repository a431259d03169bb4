// Numbered plain-SQL migrations (db/migrations/NNNN_name.sql), applied in order, each in its own
// transaction, each once. On PostgreSQL an advisory lock lets several processes start together.

import fs from "node:fs";
import path from "node:path";
import type { DatabaseHandle } from "./database.ts";

const migrationsDir = path.join(import.meta.dirname, "migrations");
const lockKey = 7_346_201_991;

export interface Migration {
  version: string;
  sql: string;
}

export function listMigrations(): Migration[] {
  return fs
    .readdirSync(migrationsDir)
    .filter((f) => /^\d{4}_[a-z0-9_]+\.sql$/.test(f))
    .sort()
    .map((f) => ({
      version: f.replace(/\.sql$/, ""),
      sql: fs.readFileSync(path.join(migrationsDir, f), "utf8"),
    }));
}

/** Applies the pending migrations and returns their versions. */
export async function migrate(database: DatabaseHandle): Promise<string[]> {
  return database.withScriptSession(async (run) => {
    await run("BEGIN");
    try {
      await run(`SELECT pg_advisory_xact_lock(${lockKey})`);
      await run(`CREATE TABLE IF NOT EXISTS schema_migrations (
        version text PRIMARY KEY,
        applied_at timestamptz NOT NULL DEFAULT now()
      )`);
      const done = new Set(
        (await run("SELECT version FROM schema_migrations")).map((r) => String(r.version)),
      );
      const applied: string[] = [];
      for (const m of listMigrations()) {
        if (done.has(m.version)) continue;
        await run(m.sql);
        await run(`INSERT INTO schema_migrations (version) VALUES ('${m.version}')`);
        applied.push(m.version);
      }
      await run("COMMIT");
      return applied;
    } catch (err) {
      await run("ROLLBACK");
      throw err;
    }
  });
}
