// Opens the store of record: PostgreSQL through `pg` when a URL is given, otherwise PGlite
// (PostgreSQL compiled to WASM) in a data folder. Both speak the same SQL and run the same
// migrations; both return NUMERIC and timestamptz as text and int8 as a number.

import crypto from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import { PGlite } from "@electric-sql/pglite";
import { Kysely, PostgresDialect } from "kysely";
import { PGliteDialect } from "kysely-pglite-dialect";
import pg from "pg";
import type { Database } from "./schema.ts";
import { isoFromPg } from "./time.ts";

export type Db = Kysely<Database>;

/** Runs SQL text over the simple query protocol (several statements per call), rows of the last. */
export type ScriptRunner = (text: string) => Promise<Record<string, unknown>[]>;

export interface DatabaseHandle {
  readonly db: Db;
  readonly kind: "pglite" | "postgres";
  /** One session for SQL scripts such as migrations; nothing else uses it meanwhile. */
  withScriptSession<T>(work: (run: ScriptRunner) => Promise<T>): Promise<T>;
  close(): Promise<void>;
}

const oid = { int8: 20, numeric: 1700, date: 1082, timestamp: 1114, timestamptz: 1184 } as const;

function parseInt8(text: string): number {
  const n = Number(text);
  if (!Number.isSafeInteger(n)) throw new Error(`int8 beyond 2^53: ${text}`);
  return n;
}

export interface OpenOptions {
  databaseUrl: string | null;
  /** PGlite's folder; null keeps PGlite in memory (tests). */
  pgliteDir: string | null;
  poolSize?: number;
  /** PostgreSQL schema to work in (tests give each file its own). */
  searchPath?: string;
}

export async function openDatabase(options: OpenOptions): Promise<DatabaseHandle> {
  if (options.databaseUrl !== null) {
    return openPostgres(options.databaseUrl, options.poolSize ?? 20, options.searchPath);
  }
  return openPglite(options.pgliteDir);
}

/**
 * Starts the text of a statement that is to be prepared: on PostgreSQL it is parsed and planned
 * once per connection, under a name derived from its text, and only bound and executed after
 * that. Meant for the few statements on the hottest paths (every signed POST, every deposit):
 * parsing and planning them at every execution was about 30% of PostgreSQL's work per deposit.
 * Preparing every statement would keep a plan per distinct text on every connection. PGlite reads
 * the marker as the comment it is.
 */
export const preparedMarker = "/* prepared */";

const statementNames = new Map<string, string>();

function statementName(text: string): string {
  let name = statementNames.get(text);
  if (name === undefined) {
    name = `cp_${crypto.createHash("sha256").update(text).digest("hex").slice(0, 32)}`;
    // Marked texts are constants of the code, so the map stays small; the bound is a safeguard.
    if (statementNames.size >= 1_000) statementNames.clear();
    statementNames.set(text, name);
  }
  return name;
}

/** A pg client that prepares the statements marked with `preparedMarker`. */
class PreparingClient extends pg.Client {}
const plainQuery = pg.Client.prototype.query as (this: pg.Client, ...args: unknown[]) => unknown;
(PreparingClient.prototype as unknown as { query: unknown }).query = function query(
  this: pg.Client,
  ...args: unknown[]
): unknown {
  const [text, values] = args;
  if (typeof text === "string" && text.startsWith(preparedMarker) && args.length <= 2) {
    return plainQuery.call(this, { name: statementName(text), text, values });
  }
  return plainQuery.apply(this, args);
};

async function openPostgres(
  url: string,
  poolSize: number,
  searchPath: string | undefined,
): Promise<DatabaseHandle> {
  if (searchPath !== undefined && !/^[a-z_][a-z0-9_]*$/.test(searchPath)) throw new Error("bad schema name");
  const types = {
    getTypeParser(id: number, format?: "text" | "binary") {
      if (id === oid.int8) return parseInt8;
      if (id === oid.numeric) return (v: string) => v;
      if (id === oid.timestamptz) return isoFromPg;
      if (id === oid.date) return (v: string) => v;
      return pg.types.getTypeParser(id, format);
    },
  };
  const pool = new pg.Pool({
    Client: PreparingClient,
    connectionString: url,
    max: poolSize,
    types: types as pg.CustomTypesConfig,
    options: `-c TimeZone=UTC${searchPath === undefined ? "" : ` -c search_path=${searchPath}`}`,
  });
  // An idle client that loses its server must not crash the process; the pool replaces it.
  pool.on("error", () => {});
  const db = new Kysely<Database>({ dialect: new PostgresDialect({ pool }) });
  return {
    db,
    kind: "postgres",
    withScriptSession: async (work) => {
      const client = await pool.connect();
      try {
        return await work(async (text) => {
          const result = (await client.query(text)) as unknown as pg.QueryResult | pg.QueryResult[];
          const last = Array.isArray(result) ? result.at(-1) : result;
          return (last?.rows ?? []) as Record<string, unknown>[];
        });
      } finally {
        client.release();
      }
    },
    close: () => db.destroy(),
  };
}

async function openPglite(dir: string | null): Promise<DatabaseHandle> {
  let release = () => {};
  if (dir !== null) {
    fs.mkdirSync(dir, { recursive: true });
    release = takeFolderLock(dir);
  }
  try {
    // Options must travel in the first argument: PGlite ignores the second without a folder.
    const client = await PGlite.create({
      ...(dir === null ? {} : { dataDir: dir }),
      parsers: {
        [oid.int8]: parseInt8,
        [oid.numeric]: (v: string) => v,
        [oid.timestamptz]: isoFromPg,
        [oid.date]: (v: string) => v,
      },
    });
    await client.exec("SET TIME ZONE 'UTC'");
    const db = new Kysely<Database>({ dialect: new PGliteDialect(client) });
    return {
      db,
      kind: "pglite",
      // Kysely's PGlite driver serialises its own queries; scripts run before the service serves.
      withScriptSession: async (work) =>
        work(async (text) => {
          const results = await client.exec(text);
          return (results.at(-1)?.rows ?? []) as Record<string, unknown>[];
        }),
      close: async () => {
        try {
          await db.destroy();
        } finally {
          release();
        }
      },
    };
  } catch (err) {
    release();
    throw err;
  }
}

export class FolderLockedError extends Error {
  constructor(dir: string, pid: number) {
    super(
      `the PGlite data folder ${dir} is in use by process ${pid}; PGlite serves one process. ` +
        "Stop that process, or use PostgreSQL (DATABASE_URL) to run several.",
    );
    this.name = "FolderLockedError";
  }
}

/**
 * PGlite has no lock of its own: two processes on one folder would corrupt it. A lock file holding
 * the owner's pid is taken exclusively; a lock left by a dead process is taken over.
 */
function takeFolderLock(dir: string): () => void {
  const lockPath = path.join(dir, "counterpart.lock");
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      fs.writeFileSync(lockPath, String(process.pid), { flag: "wx" });
      return () => fs.rmSync(lockPath, { force: true });
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "EEXIST") throw err;
      const owner = Number(fs.readFileSync(lockPath, "utf8").trim());
      if (Number.isInteger(owner) && owner > 0 && owner !== process.pid && processAlive(owner)) {
        throw new FolderLockedError(dir, owner);
      }
      fs.rmSync(lockPath, { force: true });
    }
  }
  throw new Error(`could not take the lock on ${dir}`);
}

function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === "EPERM";
  }
}
