// Numbered plain-SQL migrations (db/migrations/NNNN_name.sql), applied in order, each in its own
// transaction, each once. On PostgreSQL an advisory lock lets several processes start together.

import fs from "node:fs";
import path from "node:path";
import { sql } from "kysely";
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

/**
 * Whether the recorded migrations are exactly the shipped ones, read with two cheap statements on
 * a pooled connection: a start on a current schema then takes neither a script session nor the
 * migrations' lock. Anything else (no table yet, a version missing or unknown) goes the long way,
 * which serialises with other processes and decides under the lock.
 */
async function schemaCurrent(database: DatabaseHandle, shipped: Migration[]): Promise<boolean> {
  const table = await sql<{ present: boolean }>`
    SELECT to_regclass('schema_migrations') IS NOT NULL AS present`.execute(database.db);
  if (table.rows[0]?.present !== true) return false;
  const recorded = await sql<{ version: string }>`SELECT version FROM schema_migrations`.execute(database.db);
  const versions = new Set(recorded.rows.map((r) => r.version));
  return versions.size === shipped.length && shipped.every((m) => versions.has(m.version));
}

/** Applies the pending migrations and returns their versions (none when the schema is current). */
export async function migrate(database: DatabaseHandle): Promise<string[]> {
  const shipped = listMigrations();
  if (await schemaCurrent(database, shipped)) return [];
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
      for (const m of shipped) {
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
