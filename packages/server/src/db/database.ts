// Opens the store of record: PostgreSQL through `pg` when a URL is given, otherwise PGlite
// (PostgreSQL compiled to WASM) in a data folder. Both speak the same SQL and run the same
// migrations; both return NUMERIC and timestamptz as text and int8 as a number.

import crypto from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import { Kysely, PostgresDialect, sql } from "kysely";
import pg from "pg";
import { limits } from "../config/limits.ts";
import { preparingClient } from "./pglite-prepared.ts";
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
  /**
   * Runs `work` in one read-only snapshot (REPEATABLE READ) whose statements, together, are
   * bounded by `boundMs` instead of each by `databaseStatementMs`: for a read that must see
   * everything at once and may take longer than a request's statement (the ledger check). On
   * PostgreSQL it has a connection of the pool to itself; past the bound it throws
   * DatabaseUnavailableError, as a statement past its own does. On PGlite it is a transaction
   * like any other, unbounded (PGlite runs one statement at a time, in this process).
   */
  withReadSnapshot<T>(boundMs: number, work: (run: ScriptRunner) => Promise<T>): Promise<T>;
  /**
   * Tries, once, to take the session-level advisory lock `key` on a connection of its own, held
   * out of the pool for as long as the lock is: null when another session holds it. On PGlite
   * (one process per folder) the lock is always granted and never lost. Throws
   * DatabaseUnavailableError when the database cannot be reached.
   */
  tryAdvisoryLock(key: number): Promise<HeldLock | null>;
  close(): Promise<void>;
}

/** A session-level advisory lock held on a dedicated connection (tryAdvisoryLock). */
export interface HeldLock {
  /**
   * Resolves once the lock may be lost: its connection failed, ended, or did not answer a check
   * in time. The server drops a dead session's advisory locks, so another process may take it.
   */
  readonly lost: Promise<void>;
  /** Gives the lock up (its connection is closed); safe to call more than once, never throws. */
  release(): Promise<void>;
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
 * Preparing every statement would keep a plan per distinct text on every connection. PGlite keeps
 * the marked statements prepared too (db/pglite-prepared.ts).
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

/**
 * The database could not be reached or did not answer in time: no connection could be had, the
 * connection was lost, or a bound of `limits` ran out. Nothing is known to have been committed by
 * the statement that failed; the request is answered 503 (docs/errors.md) and can be retried.
 */
export class DatabaseUnavailableError extends Error {
  constructor(cause: unknown) {
    super(`database unavailable: ${cause instanceof Error ? cause.message : String(cause)}`, { cause });
    this.name = "DatabaseUnavailableError";
  }
}

/**
 * SQLSTATEs that say the server is going away, starting, overloaded or out of time, rather than
 * that the statement was wrong: connection exceptions (class 08), too many connections, admin or
 * crash shutdown, cannot connect now, statement timeout or cancel, lock timeout, idle in
 * transaction too long.
 */
const unavailableStates = new Set(["53300", "57P01", "57P02", "57P03", "57014", "55P03", "25P03"]);

function unavailableState(code: unknown): boolean {
  return typeof code === "string" && (code.startsWith("08") || unavailableStates.has(code));
}

/**
 * SQLSTATEs with which the server ends the session that received them: a connection exception,
 * the session terminated (pg_terminate_backend) or the server shutting down, idle in a transaction
 * too long.
 */
function sessionEnding(code: string): boolean {
  return code.startsWith("08") || code === "57P01" || code === "57P02" || code === "25P03";
}

/** Clients whose connection failed or ended: every error they give is the database's absence. */
const lostClients = new WeakSet<pg.Client>();

/**
 * A pg client that prepares the statements marked with `preparedMarker`, survives losing its
 * connection while checked out, and reports that loss as a DatabaseUnavailableError.
 */
export class PreparingClient extends pg.Client {
  constructor(config?: string | pg.ClientConfig) {
    super(config);
    // pg-pool listens for 'error' only while a client is idle in the pool, but a client whose
    // connection dies emits it at any time, also while a query of a request runs on it; an 'error'
    // event nobody listens to ends the process. The query in flight fails on its own, and the pool
    // drops the client when it comes back (it is no longer queryable).
    this.on("error", () => lostClients.add(this));
    this.on("end", () => lostClients.add(this));
  }
}

const plainQuery = pg.Client.prototype.query as (this: pg.Client, ...args: unknown[]) => unknown;
(PreparingClient.prototype as unknown as { query: unknown }).query = function query(
  this: pg.Client,
  ...args: unknown[]
): unknown {
  const [text, values] = args;
  // A Query made by the caller (a submittable) is its caller's, bound and all.
  if (typeof (text as { submit?: unknown })?.submit === "function") return plainQuery.apply(this, args);
  const last = args.at(-1);
  if (typeof last === "function") {
    // pg's callback form (pg.Pool's own query uses it): a string statement is sent as every other,
    // with the same read bound and errors; an object gets the read bound when it has none.
    const callback = last as (err: unknown, result?: unknown) => void;
    if (typeof text === "string") {
      // Called outside the promise, as pg calls it: a throw in it is not a rejection nobody handles.
      sendStatement(this, text, args.length > 2 ? (values as unknown[] | undefined) : undefined).then(
        (result) => process.nextTick(callback, null, result),
        (err: unknown) => process.nextTick(callback, err),
      );
      return undefined;
    }
    return plainQuery.apply(this, [
      readBounded(text),
      ...args.slice(1, -1),
      (err: unknown, result?: unknown) => {
        callback(err ? statementFailure(this, err) : err, result);
      },
    ]);
  }
  if (typeof text !== "string" || args.length > 2) {
    // A query given as an object carries its own bound (`query_timeout`: migrations, the ledger
    // check's snapshot), which pg keeps; one without gets the read bound.
    const answer = plainQuery.apply(this, [readBounded(text), ...args.slice(1)]);
    // No promise when the object carries its own callback, which then gets pg's errors as they are.
    if (!(answer instanceof Promise)) return answer;
    return answer.catch((err: unknown) => {
      throw statementFailure(this, err);
    });
  }
  return sendStatement(this, text, values as unknown[] | undefined);
};

/** A query given as an object, with pg's read bound (`query_timeout`) set to ours when it has none. */
function readBounded(config: unknown): unknown {
  if (typeof config !== "object" || config === null) return config;
  if ((config as { query_timeout?: unknown }).query_timeout !== undefined) return config;
  return { ...config, query_timeout: limits.databaseReadMs };
}

/** The error of a statement whose answer did not come within `limits.databaseReadMs`. */
const readTimeoutMessage = "Query read timeout";

/**
 * Sends one statement and answers with its result, or with what its failure means: the read bound
 * (`limits.databaseReadMs`) running out, or a session the server ended, closes the connection; a
 * lost connection or an unavailable server is a DatabaseUnavailableError.
 *
 * pg is given the statement in its callback form, the Query made with its callback, and the read
 * bound is kept here rather than by pg's `query_timeout`. pg's promise form (and its
 * `query_timeout`, the same way) sets the callback on a Query already made; with it, a worker's
 * young-generation collections kept every statement's rows alive past them (some 3 KiB per
 * statement promoted to the old generation, a few bytes without it; docs/decisions.md, "A
 * statement's answer through pg's callback form"). A marked statement goes as a Query made from
 * its text, with its name: pg copies a query given as a plain object, property by property, at
 * every query (docs/decisions.md, "A marked statement handed to pg as a Query").
 */
function sendStatement(client: pg.Client, text: string, values: unknown[] | undefined): Promise<unknown> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(readTimedOut, limits.databaseReadMs, client, reject);
    const answer = (err: Error | null | undefined, result?: unknown) => {
      clearTimeout(timer);
      if (err) reject(statementFailure(client, err));
      else resolve(result);
    };
    try {
      if (text.startsWith(preparedMarker)) {
        // Made from the text, not from a config object, which pg would copy; named after.
        const query = new pg.Query(text, values, answer) as pg.Query & { name?: string };
        query.name = statementName(text);
        plainQuery.call(client, query);
      } else {
        plainQuery.call(client, text, values, answer);
      }
    } catch (err) {
      clearTimeout(timer);
      reject(statementFailure(client, err));
    }
  });
}

function readTimedOut(client: pg.Client, reject: (err: unknown) => void): void {
  reject(statementFailure(client, new Error(readTimeoutMessage)));
}

/** What a statement's failure is to its caller; a connection that cannot be trusted is closed. */
function statementFailure(client: pg.Client, err: unknown): unknown {
  const code = (err as { code?: unknown } | null)?.code;
  if (
    (err instanceof Error && err.message === readTimeoutMessage) ||
    (typeof code === "string" && sessionEnding(code))
  ) {
    // The server may still be working on the statement, or be out of reach, or it has ended the
    // session: the connection is closed and the pool will not hand it out again. (Its end is
    // seen a moment after the error, by then the client may be back in the pool, and the next
    // request's statement would fail on it.)
    lostClients.add(client);
    client.end().catch(() => {});
  }
  if (lostClients.has(client) || unavailableState(code)) return new DatabaseUnavailableError(err);
  return err;
}

/** A pool whose failure to hand out a connection (refused, timed out, starting) is a DatabaseUnavailableError. */
class GuardedPool extends pg.Pool {}
const plainConnect = pg.Pool.prototype.connect as (this: pg.Pool, ...args: unknown[]) => unknown;
(GuardedPool.prototype as unknown as { connect: unknown }).connect = function connect(
  this: pg.Pool,
  ...args: unknown[]
): unknown {
  if (args.length > 0) return plainConnect.apply(this, args);
  return (plainConnect.call(this) as Promise<pg.PoolClient>).catch((err: unknown) => {
    throw err instanceof DatabaseUnavailableError ? err : new DatabaseUnavailableError(err);
  });
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
  const poolConfig: pg.PoolConfig = {
    Client: PreparingClient,
    connectionString: url,
    types: types as pg.CustomTypesConfig,
    // JIT off: see docs/decisions.md, "No JIT on the service's connections".
    options: `-c TimeZone=UTC -c jit=off${searchPath === undefined ? "" : ` -c search_path=${searchPath}`}`,
    // Every wait on the database is bounded (config/limits.ts, docs/operations.md).
    connectionTimeoutMillis: limits.databaseConnectMs,
    statement_timeout: limits.databaseStatementMs,
    // The read bound (limits.databaseReadMs) is the client's own (PreparingClient, sendStatement).
    idle_in_transaction_session_timeout: limits.databaseIdleInTransactionMs,
    keepAlive: true,
    keepAliveInitialDelayMillis: 10_000,
  };
  const pool = new GuardedPool({ ...poolConfig, max: poolSize });
  // Advisory locks held for a leadership (tryAdvisoryLock) get connections of their own, so that
  // a leader never takes from the requests' pool, however small DATABASE_POOL_SIZE is.
  const lockPool = new GuardedPool({ ...poolConfig, max: advisoryLocksMax });
  // An idle client that loses its server must not crash the process; the pool replaces it.
  pool.on("error", () => {});
  lockPool.on("error", () => {});
  const db = new Kysely<Database>({ dialect: new PostgresDialect({ pool }) });
  return {
    db,
    kind: "postgres",
    withScriptSession: async (work) => {
      const client = await pool.connect();
      try {
        // A migration may rewrite a table, and waits for another process's migrations (advisory
        // lock): its statements get the longer bound. The session is closed after, not pooled.
        await client.query(`SET statement_timeout = ${limits.databaseMigrationStatementMs}`);
        return await work(async (text) => {
          // query_timeout per query is read by pg's client but missing from its types.
          const config = { text, query_timeout: limits.databaseMigrationStatementMs + 1_000 };
          const result = (await client.query(config as pg.QueryConfig)) as unknown as
            | pg.QueryResult
            | pg.QueryResult[];
          const last = Array.isArray(result) ? result.at(-1) : result;
          return (last?.rows ?? []) as Record<string, unknown>[];
        });
      } finally {
        client.release(true);
      }
    },
    withReadSnapshot: async (boundMs, work) => {
      if (!Number.isSafeInteger(boundMs) || boundMs <= 0) throw new Error("bad snapshot bound");
      const deadline = performance.now() + boundMs;
      const client = await pool.connect();
      let failed = false;
      try {
        const send = async (text: string, waitMs: number) => {
          // query_timeout per query is read by pg's client but missing from its types.
          const config = { text, query_timeout: waitMs };
          const result = (await client.query(config as pg.QueryConfig)) as unknown as pg.QueryResult;
          return result.rows as Record<string, unknown>[];
        };
        await send("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY", limits.databaseReadMs);
        // Each statement gets what is left of the bound: the server cancels it then, and the
        // client, a second later, gives up on a server that cannot answer at all.
        const run = async (text: string) => {
          const leftMs = Math.ceil(deadline - performance.now());
          if (leftMs <= 0) {
            throw new DatabaseUnavailableError(new Error(`read snapshot past its ${boundMs} ms`));
          }
          await send(`SET LOCAL statement_timeout = ${leftMs}`, limits.databaseReadMs);
          return send(text, leftMs + 1_000);
        };
        const result = await work(run);
        await send("COMMIT", limits.databaseReadMs);
        return result;
      } catch (err) {
        failed = true;
        throw err;
      } finally {
        // A failed snapshot's session is closed, not pooled: its transaction may still be open.
        client.release(failed);
      }
    },
    tryAdvisoryLock: (key) => tryPostgresLock(lockPool, key),
    close: once(async () => {
      try {
        await db.destroy();
      } finally {
        await lockPool.end();
      }
    }),
  };
}

/**
 * How often a held advisory lock's connection is checked. A connection that dies silently (server
 * gone, network cut) is noticed by this check within `heldLockCheckMs` plus the read bound, so the
 * holder stops its work before the server, which needs longer to notice, lets another take over.
 */
const heldLockCheckMs = 1_000;

/** Connections for advisory locks held at once by one process: one per background job, and room. */
const advisoryLocksMax = 4;

async function tryPostgresLock(pool: pg.Pool, key: number): Promise<HeldLock | null> {
  if (!Number.isSafeInteger(key)) throw new Error("bad advisory lock key");
  const client = await pool.connect();
  let taken: boolean;
  try {
    const result = await client.query<{ taken: boolean }>(`SELECT pg_try_advisory_lock(${key}) AS taken`);
    taken = result.rows[0]?.taken === true;
  } catch (err) {
    client.release(true);
    throw err;
  }
  if (!taken) {
    client.release();
    return null;
  }
  let released = false;
  let markLost = () => {};
  const lost = new Promise<void>((resolve) => (markLost = resolve));
  const release = async () => {
    if (released) return;
    released = true;
    clearInterval(timer);
    markLost();
    // Closing the session gives the lock up; the connection is not returned to the pool, where
    // it would keep the lock.
    client.release(true);
  };
  let checking = false;
  const timer = setInterval(() => {
    if (checking || released) return;
    checking = true;
    client.query("SELECT 1").then(
      () => (checking = false),
      () => void release(),
    );
  }, heldLockCheckMs);
  timer.unref();
  client.once("error", () => void release());
  client.once("end", () => void release());
  return { lost, release };
}

async function openPglite(dir: string | null): Promise<DatabaseHandle> {
  let release = () => {};
  if (dir !== null) {
    fs.mkdirSync(dir, { recursive: true });
    release = takeFolderLock(dir);
  }
  try {
    // Loaded here, not at the top: a process on PostgreSQL starts without them (a few hundred ms).
    const [pglite, { PGliteDialect }] = await Promise.all([
      import("@electric-sql/pglite"),
      import("kysely-pglite-dialect"),
    ]);
    const { PGlite } = pglite;
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
    // Marked statements are prepared once, as on PostgreSQL (db/pglite-prepared.ts).
    const preparing = preparingClient(client, pglite, preparedMarker, statementName);
    const db = new Kysely<Database>({ dialect: new PGliteDialect(preparing as unknown as typeof client) });
    return {
      db,
      kind: "pglite",
      // Kysely's PGlite driver serialises its own queries; scripts run before the service serves.
      withScriptSession: async (work) =>
        work(async (text) => {
          const results = await client.exec(text);
          return (results.at(-1)?.rows ?? []) as Record<string, unknown>[];
        }),
      withReadSnapshot: (_boundMs, work) =>
        db
          .transaction()
          .setIsolationLevel("repeatable read")
          .execute(async (trx) => {
            // The PGlite dialect drops Kysely's access mode: set here, before the transaction's
            // first query.
            await sql`SET TRANSACTION READ ONLY`.execute(trx);
            return work(async (text) => (await sql.raw<Record<string, unknown>>(text).execute(trx)).rows);
          }),
      tryAdvisoryLock: async () => ({ lost: new Promise<void>(() => {}), release: async () => {} }),
      close: once(async () => {
        try {
          await db.destroy();
        } finally {
          release();
        }
      }),
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

/** `close` run once: a second call waits for the first instead of closing again (and throwing). */
export function once(close: () => Promise<void>): () => Promise<void> {
  let closing: Promise<void> | null = null;
  return () => {
    closing ??= close();
    return closing;
  };
}
