// A database whose schema stops before a given migration, for tests of what that migration does to
// rows written before it: a schema of its own in the run's PostgreSQL database (dropped by close),
// or an in-memory PGlite.

import crypto from "node:crypto";
import pg from "pg";
import { type DatabaseHandle, openDatabase } from "../db/database.ts";
import { listMigrations } from "../db/migrate.ts";
import { testDatabaseUrl } from "./harness.ts";

export interface EarlierDatabase {
  database: DatabaseHandle;
  close(): Promise<void>;
}

async function adminQuery(text: string): Promise<void> {
  const c = new pg.Client({ connectionString: testDatabaseUrl! });
  await c.connect();
  await c.query(text).finally(() => c.end());
}

/** The migrations before `version`, applied and recorded as migrate() applies them. */
export async function openDatabaseBefore(version: string): Promise<EarlierDatabase> {
  let schema: string | null = null;
  if (testDatabaseUrl !== null) {
    schema = `t_${process.pid}_${crypto.randomBytes(4).toString("hex")}`;
    await adminQuery(`CREATE SCHEMA ${schema}`);
  }
  const database = await openDatabase({
    databaseUrl: testDatabaseUrl,
    pgliteDir: null,
    ...(schema === null ? {} : { searchPath: schema, poolSize: 2 }),
  });
  const close = async () => {
    await database.close();
    if (schema !== null) await adminQuery(`DROP SCHEMA ${schema} CASCADE`);
  };
  try {
    await database.withScriptSession(async (run) => {
      await run(`CREATE TABLE schema_migrations (
        version text PRIMARY KEY,
        applied_at timestamptz NOT NULL DEFAULT now()
      )`);
      for (const m of listMigrations().filter((m) => m.version < version)) {
        await run(m.sql);
        await run(`INSERT INTO schema_migrations (version) VALUES ('${m.version}')`);
      }
    });
  } catch (err) {
    await close();
    throw err;
  }
  return { database, close };
}
