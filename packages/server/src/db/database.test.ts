// Both drivers return the same JS values: NUMERIC and dates as text, int8 as a number,
// timestamptz as ISO 8601 UTC text with microseconds.

import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { CompiledQuery, sql } from "kysely";
import { limits } from "../config/limits.ts";
import { openTestDatabase, testDatabaseUrl } from "../testing/harness.ts";
import {
  type DatabaseHandle,
  DatabaseUnavailableError,
  PreparingClient,
  preparedMarker,
} from "./database.ts";
import { isUnavailable } from "./errors.ts";
import { moneyFromPg, moneyToPg } from "./numeric.ts";
import { isoFromMs, isoFromPg } from "./time.ts";

let database: DatabaseHandle;
before(async () => {
  database = await openTestDatabase();
});
after(async () => {
  await database.close();
});

test("types come back the same on PGlite and PostgreSQL", async () => {
  const { rows } = await sql<{ n: unknown; b: unknown; d: unknown; t: unknown; z: unknown }>`
    SELECT 349250.5::numeric(38, 8) AS n, 9007199254740991::int8 AS b, '2030-01-31'::date AS d,
           '2026-11-21 09:30:00.123456+00'::timestamptz AS t, '0'::numeric(38, 8) AS z
  `.execute(database.db);
  assert.deepEqual(rows[0], {
    n: "349250.50000000",
    b: 9007199254740991,
    d: "2030-01-31",
    t: "2026-11-21T09:30:00.123456Z",
    z: "0.00000000",
  });
});

test("NUMERIC text and scale-8 bigints convert exactly both ways", () => {
  const cases: [string, bigint][] = [
    ["0.00000000", 0n],
    ["0.00000001", 1n],
    ["349250.50000000", 34925050000000n],
    ["-1.50000000", -150000000n],
    ["123456789012345678901234567890.12345678", 12345678901234567890123456789012345678n],
  ];
  for (const [text, value] of cases) {
    assert.equal(moneyFromPg(text), value, text);
    assert.equal(moneyToPg(value), text, text);
  }
  assert.equal(moneyFromPg("5"), 500000000n);
  assert.throws(() => moneyFromPg("1e5"));
  assert.throws(() => moneyFromPg("0.123456789"));
});

test("timestamps: database text and millisecond instants to ISO with microseconds", () => {
  assert.equal(isoFromPg("2026-11-21 09:30:00+00"), "2026-11-21T09:30:00.000000Z");
  assert.equal(isoFromPg("2026-11-21 09:30:00.1+00"), "2026-11-21T09:30:00.100000Z");
  assert.equal(isoFromMs(Date.UTC(2026, 10, 21, 9, 30, 0, 123)), "2026-11-21T09:30:00.123000Z");
  assert.throws(() => isoFromPg("2026-11-21 09:30:00+04"));
});

test("a statement marked to be prepared is prepared once per connection, on PGlite as on PostgreSQL", async () => {
  await database.db.connection().execute(async (conn) => {
    const marked = (n: number) =>
      sql<{ twice: number }>`${sql.raw(preparedMarker)} SELECT ${n}::int8 * 2 AS twice`.execute(conn);
    const prepared = async () =>
      (
        await sql<{ name: string; statement: string }>`
          SELECT name, statement FROM pg_prepared_statements ORDER BY name
        `.execute(conn)
      ).rows;
    const before = await prepared();
    for (const n of [1, 2, 3]) assert.deepEqual((await marked(n)).rows, [{ twice: n * 2 }]);
    await sql`SELECT ${4}::int8 * 3 AS plain`.execute(conn);
    const added = (await prepared()).filter((r) => !before.some((b) => b.name === r.name));
    assert.equal(added.length, 1, JSON.stringify(added));
    assert.match(added[0]!.name, /^cp_[0-9a-f]{32}$/);
    assert.ok(added[0]!.statement.startsWith(`${preparedMarker} SELECT`));
  });
});

test("a marked statement answers as the same statement unmarked: rows, types, counts, errors", async () => {
  await database.db.connection().execute(async (conn) => {
    /** The statement plain, then marked twice (kept, then run again kept): the same answer each time. */
    const both = async (text: string, params: unknown[] | ((run: number) => unknown[])) => {
      const at = (run: number) => (typeof params === "function" ? params(run) : params);
      const plain = await conn.executeQuery(CompiledQuery.raw(text, at(0)));
      for (const run of [1, 2]) {
        const kept = await conn.executeQuery(CompiledQuery.raw(`${preparedMarker}\n${text}`, at(run)));
        assert.deepEqual(kept, plain, `${text} (run ${run})`);
      }
      return plain;
    };
    await sql`CREATE TEMPORARY TABLE kept_t (id int8 PRIMARY KEY, tag text UNIQUE, amount numeric(38, 8),
      at timestamptz, tags text[], doc jsonb)`.execute(conn);
    // Every type the stores read, a null, an array parameter, and a statement that returns no rows.
    const insert = await both(
      `INSERT INTO kept_t (id, tag, amount, at, tags, doc)
       SELECT $1::int8 + g, $2 || g, $3::numeric, $4::timestamptz, $5::text[], $6::jsonb
       FROM generate_series(0, 1) g`,
      (run) => [
        10 + 2 * run,
        `t${run}-`,
        "12.5",
        "2026-11-21T09:30:00.123456Z",
        ["a", "b"],
        JSON.stringify({ k: [1, "2"] }),
      ],
    );
    assert.equal(insert.numAffectedRows, 2n);
    const read = await both(
      "SELECT id, tag, amount, at, tags, doc, NULL::text AS nothing FROM kept_t WHERE tag = any($1::text[]) AND id > $2 ORDER BY id",
      [["t1-0", "t1-1", "x"], 0],
    );
    const row = { amount: "12.50000000", at: "2026-11-21T09:30:00.123456Z", tags: ["a", "b"] };
    assert.deepEqual(
      read.rows,
      [12, 13].map((id, i) => ({ id, tag: `t1-${i}`, ...row, doc: { k: [1, "2"] }, nothing: null })),
    );
    const none = await both("SELECT id FROM kept_t WHERE id = $1", [99]);
    assert.deepEqual(none.rows, []);
    const update = await both("UPDATE kept_t SET amount = amount WHERE id >= $1", [12]);
    assert.equal(update.numAffectedRows, 4n);
    assert.deepEqual((await both("SELECT $1::text IS NULL AS missing", [null])).rows, [{ missing: true }]);

    // Errors: the same SQLSTATE and constraint; the connection goes on, in and out of a transaction.
    const failure = (text: string, params: unknown[]) =>
      conn.executeQuery(CompiledQuery.raw(text, params)).then(
        () => assert.fail(`expected ${text} to fail`),
        (e: { code?: string; constraint?: string }) => ({ code: e.code, constraint: e.constraint }),
      );
    const duplicate = "INSERT INTO kept_t (id, tag) VALUES ($1, $2)";
    const plainDup = await failure(duplicate, [20, "t1-0"]);
    assert.deepEqual(plainDup, { code: "23505", constraint: "kept_t_tag_key" });
    assert.deepEqual(await failure(`${preparedMarker}\n${duplicate}`, [20, "t1-0"]), plainDup);
    assert.deepEqual(await failure(`${preparedMarker}\nSELEC 1`, []), await failure("SELEC 1", []));
    await sql`BEGIN`.execute(conn);
    assert.equal((await failure(`${preparedMarker}\n${duplicate}`, [21, "t1-1"])).code, "23505");
    assert.equal(
      (await failure(`${preparedMarker}\nSELECT id FROM kept_t WHERE id = $1`, [10])).code,
      "25P02",
    );
    await sql`ROLLBACK`.execute(conn);
    await sql`BEGIN`.execute(conn);
    await conn.executeQuery(CompiledQuery.raw(`${preparedMarker}\n${duplicate}`, [22, "t22"]));
    await sql`ROLLBACK`.execute(conn);
    assert.deepEqual((await both("SELECT count(*)::int8 AS n FROM kept_t", [])).rows, [{ n: 6 }]);
    await sql`DROP TABLE kept_t`.execute(conn);
  });
});

test("on PGlite a marked statement whose plan was thrown away is prepared again, outside a transaction only", async () => {
  if (database.kind !== "pglite") {
    // pg prepares on PostgreSQL and does not prepare again: hot statements name their columns
    // (docs/decisions.md, "Prepared statements on the hot path").
    assert.equal(database.kind, "postgres");
    return;
  }
  await database.db.connection().execute(async (conn) => {
    const read = () =>
      conn.executeQuery<Record<string, unknown>>(
        CompiledQuery.raw(`${preparedMarker}\nSELECT * FROM replanned ORDER BY id`, []),
      );
    await sql`CREATE TABLE replanned (id int8 PRIMARY KEY)`.execute(conn);
    await sql`INSERT INTO replanned VALUES (1)`.execute(conn);
    assert.deepEqual((await read()).rows, [{ id: 1 }]);
    // The result type changes under the kept statement (SQLSTATE 0A000): prepared again.
    await sql`ALTER TABLE replanned ADD COLUMN tag text DEFAULT 'x'`.execute(conn);
    assert.deepEqual((await read()).rows, [{ id: 1, tag: "x" }]);
    // Gone from the session (26000): prepared again.
    await sql`DEALLOCATE ALL`.execute(conn);
    assert.deepEqual((await read()).rows, [{ id: 1, tag: "x" }]);
    // Inside a transaction the error has aborted it: it is the caller's, and nothing stays written.
    await sql`ALTER TABLE replanned ADD COLUMN more int8`.execute(conn);
    await sql`BEGIN`.execute(conn);
    await sql`INSERT INTO replanned (id) VALUES (2)`.execute(conn);
    await assert.rejects(read(), (e: { code?: string }) => e.code === "0A000");
    await sql`ROLLBACK`.execute(conn);
    assert.deepEqual((await read()).rows, [{ id: 1, tag: "x", more: null }]);
    await sql`DROP TABLE replanned`.execute(conn);
  });
});

test("the service's connections run in UTC and without JIT (docs/decisions.md, \"No JIT on the service's connections\")", async () => {
  // pg_jit_available(): a JIT provider is loaded and `jit` is on. PGlite has no provider.
  const { rows } = await sql<{ jit: boolean; zone: string }>`
    SELECT pg_jit_available() AS jit, current_setting('TimeZone') AS zone`.execute(database.db);
  assert.deepEqual(rows[0], { jit: false, zone: "UTC" });
});

test("a failing statement keeps its own error; only the database's absence is DatabaseUnavailableError", async () => {
  const err = await sql`SELECT 1 / 0`.execute(database.db).then(
    () => assert.fail("expected division_by_zero"),
    (e: unknown) => e,
  );
  assert.ok(!(err instanceof DatabaseUnavailableError));
  assert.equal((err as { code?: string }).code, "22012");
  assert.equal(isUnavailable(err), false);
});

test("on PostgreSQL every statement is bounded: one running past databaseStatementMs is a 503 and the pool goes on", async () => {
  if (database.kind !== "postgres") {
    // PGlite runs inside the process: no server to wait for, no connection to lose.
    assert.equal(database.kind, "pglite");
    return;
  }
  const { rows } = await sql<{ s: number; i: number }>`
    SELECT (extract(epoch FROM current_setting('statement_timeout')::interval) * 1000)::int8 AS s,
           (extract(epoch FROM current_setting('idle_in_transaction_session_timeout')::interval) * 1000)::int8 AS i
  `.execute(database.db);
  assert.deepEqual(rows, [{ s: limits.databaseStatementMs, i: limits.databaseIdleInTransactionMs }]);
  const started = Date.now();
  const err = await sql`SELECT pg_sleep(${(limits.databaseStatementMs + 2_000) / 1000})`
    .execute(database.db)
    .then(
      () => assert.fail("expected the statement to be cancelled"),
      (e: unknown) => e,
    );
  const tookMs = Date.now() - started;
  assert.ok(err instanceof DatabaseUnavailableError, String(err));
  assert.equal(isUnavailable(err), true);
  assert.ok(
    tookMs >= limits.databaseStatementMs - 100 && tookMs < limits.databaseReadMs + 500,
    `${tookMs} ms`,
  );
  assert.deepEqual((await sql<{ one: number }>`SELECT 1::int8 AS one`.execute(database.db)).rows, [
    { one: 1 },
  ]);
});

test("on PostgreSQL a statement left unanswered past databaseReadMs is a 503, its connection closed, and the pool goes on", async () => {
  if (database.kind !== "postgres") {
    // PGlite runs inside the process: no server to wait for.
    assert.equal(database.kind, "pglite");
    return;
  }
  // The server's own bound lifted for the session, so the client's read bound is what ends the
  // wait; the session is closed after, never back in the pool with the setting.
  const sleepS = (limits.databaseReadMs + 2_000) / 1000;
  const unanswered = (text: string) =>
    database.db.connection().execute(async (conn) => {
      await sql`SET statement_timeout = 0`.execute(conn);
      const started = Date.now();
      const err = await conn.executeQuery(CompiledQuery.raw(text, [])).then(
        () => assert.fail(`expected the read bound to end ${text}`),
        (e: unknown) => e,
      );
      return { err, tookMs: Date.now() - started };
    });
  const answers = await Promise.all([
    unanswered(`SELECT pg_sleep(${sleepS})`),
    unanswered(`${preparedMarker}\nSELECT pg_sleep(${sleepS})`),
  ]);
  for (const { err, tookMs } of answers) {
    assert.ok(err instanceof DatabaseUnavailableError, String(err));
    assert.match(err.message, /Query read timeout/);
    assert.equal(isUnavailable(err), true);
    assert.ok(tookMs >= limits.databaseReadMs - 50 && tookMs < limits.databaseReadMs + 1_500, `${tookMs} ms`);
  }
  // Neither session came back to the pool: every statement still has the server's bound.
  for (let i = 0; i < 4; i++) {
    const { rows } = await sql<{ s: string }>`SELECT current_setting('statement_timeout') AS s`.execute(
      database.db,
    );
    assert.notEqual(rows[0]!.s, "0");
  }
});

test("on PostgreSQL the read bound holds for every form a query may take: an object without its own bound, pg's callback form", async () => {
  if (testDatabaseUrl === null) {
    // PGlite runs inside the process: no server to wait for.
    assert.equal(database.kind, "pglite");
    return;
  }
  // The service sends none of these forms today (its statements are strings, its objects carry
  // their own bound); a dependency or a later caller that does still gets the bound, and its
  // session is closed.
  const sleep = `SELECT pg_sleep(${(limits.databaseReadMs + 2_000) / 1000})`;
  const forms: [string, (c: PreparingClient) => Promise<unknown>][] = [
    ["an object", (c) => c.query({ text: sleep })],
    [
      "a string, answered through a callback",
      (c) => new Promise((resolve, reject) => c.query(sleep, [], (e, r) => (e ? reject(e) : resolve(r)))),
    ],
    [
      "an object, answered through a callback",
      (c) =>
        new Promise((resolve, reject) => c.query({ text: sleep }, (e, r) => (e ? reject(e) : resolve(r)))),
    ],
  ];
  await Promise.all(
    forms.map(async ([form, send]) => {
      const client = new PreparingClient({ connectionString: testDatabaseUrl! });
      await client.connect();
      let ended = false;
      client.on("end", () => {
        ended = true;
      });
      try {
        await client.query("SET statement_timeout = 0");
        const started = Date.now();
        const err = await send(client).then(
          () => assert.fail(`${form}: expected the read bound to end it`),
          (e: unknown) => e,
        );
        const tookMs = Date.now() - started;
        assert.ok(err instanceof DatabaseUnavailableError, `${form}: ${String(err)}`);
        assert.match(err.message, /Query read timeout/, form);
        assert.ok(
          tookMs >= limits.databaseReadMs - 50 && tookMs < limits.databaseReadMs + 1_500,
          `${form}: ${tookMs} ms`,
        );
        const deadline = Date.now() + 2_000;
        while (!ended && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
        assert.equal(ended, true, `${form}: its session was not closed`);
      } finally {
        await client.end().catch(() => {});
      }
    }),
  );
});

test("on PostgreSQL a marked statement whose connection is lost is a 503, and the pool goes on", async () => {
  if (database.kind !== "postgres") {
    // PGlite runs inside the process: no connection to lose.
    assert.equal(database.kind, "pglite");
    return;
  }
  // The statement's own backend ends its session while the statement runs.
  const err = await database.db
    .executeQuery(CompiledQuery.raw(`${preparedMarker}\nSELECT pg_terminate_backend(pg_backend_pid())`, []))
    .then(
      () => assert.fail("expected the connection to be lost"),
      (e: unknown) => e,
    );
  assert.ok(err instanceof DatabaseUnavailableError, String(err));
  assert.equal(isUnavailable(err), true);
  const again = await database.db.executeQuery<{ one: number }>(
    CompiledQuery.raw(`${preparedMarker}\nSELECT $1::int8 AS one`, [1]),
  );
  assert.deepEqual(again.rows, [{ one: 1 }]);
});

test("an advisory lock is held by one session at a time, and a terminated session loses it", async () => {
  // A key of this test's own: advisory locks are per database, shared by every test file's schema.
  const key = 7_346_300_000 + Math.floor(Math.random() * 1_000_000);
  const held = await database.tryAdvisoryLock(key);
  assert.ok(held, "the free lock is taken");
  if (database.kind === "pglite") {
    // One process per folder: the lock is always granted, and released without error.
    await held.release();
    return;
  }
  assert.equal(await database.tryAdvisoryLock(key), null, "held by the first session");
  const { rows } = await sql<{ pid: number }>`
    SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND granted
      AND ((classid::int8 << 32) | objid::int8) = ${key}`.execute(database.db);
  assert.equal(rows.length, 1);
  await sql`SELECT pg_terminate_backend(${rows[0]!.pid})`.execute(database.db);
  const lost = await Promise.race([
    held.lost.then(() => true),
    new Promise((r) => setTimeout(r, 5_000, false)),
  ]);
  assert.equal(lost, true, "the loss is seen within seconds");
  const again = await database.tryAdvisoryLock(key);
  assert.ok(again, "taken again once the dead session's lock is gone");
  await again.release();
  await held.release();
  const third = await database.tryAdvisoryLock(key);
  assert.ok(third, "release gives it up");
  await third.release();
});

test("a read snapshot is one read-only REPEATABLE READ transaction: a write in it is refused and changes nothing", async () => {
  await sql`CREATE TABLE snapshot_probe (n int)`.execute(database.db);
  const settings = await database.withReadSnapshot(10_000, (run) =>
    run(
      "SELECT current_setting('transaction_isolation') AS isolation, current_setting('transaction_read_only') AS read_only",
    ),
  );
  assert.deepEqual(settings, [{ isolation: "repeatable read", read_only: "on" }]);
  const err = await database
    .withReadSnapshot(10_000, (run) => run("INSERT INTO snapshot_probe VALUES (1)"))
    .then(
      () => assert.fail("expected the write to be refused"),
      (e: unknown) => e,
    );
  assert.equal((err as { code?: string }).code, "25006", String(err));
  assert.deepEqual((await sql`SELECT n FROM snapshot_probe`.execute(database.db)).rows, []);
  // The handle goes on after the refusal (on PostgreSQL, the snapshot's session was closed).
  assert.deepEqual(await database.withReadSnapshot(10_000, (run) => run("SELECT 2::int8 AS two")), [
    { two: 2 },
  ]);
  await sql`DROP TABLE snapshot_probe`.execute(database.db);
});

test("on PostgreSQL a read snapshot sees one moment, and its bound covers all its statements instead of databaseStatementMs", async () => {
  if (database.kind !== "postgres") {
    // PGlite has one session: nothing commits while the snapshot's transaction is open, and no
    // statement is cancelled (it runs in this process).
    assert.equal(database.kind, "pglite");
    return;
  }
  await sql`CREATE TABLE snapshot_moment (n int)`.execute(database.db);
  const counts = await database.withReadSnapshot(10_000, async (run) => {
    const before = await run("SELECT count(*)::int8 AS n FROM snapshot_moment");
    // Committed by another session while the snapshot is open: not seen by it.
    await sql`INSERT INTO snapshot_moment VALUES (1)`.execute(database.db);
    const afterInsert = await run("SELECT count(*)::int8 AS n FROM snapshot_moment");
    return [before, afterInsert];
  });
  assert.deepEqual(counts, [[{ n: 0 }], [{ n: 0 }]]);
  assert.deepEqual((await sql`SELECT count(*)::int8 AS n FROM snapshot_moment`.execute(database.db)).rows, [
    { n: 1 },
  ]);
  await sql`DROP TABLE snapshot_moment`.execute(database.db);

  // A statement longer than a request's bound runs to its end inside a longer snapshot bound.
  const longMs = limits.databaseStatementMs + 400;
  let started = Date.now();
  const slept = await database.withReadSnapshot(limits.databaseStatementMs + 5_000, (run) =>
    run(`SELECT 1::int8 AS slept FROM pg_sleep(${longMs / 1000})`),
  );
  assert.deepEqual(slept, [{ slept: 1 }]);
  assert.ok(Date.now() - started >= longMs - 50, `${Date.now() - started} ms`);

  // Two statements of 1 s under a bound of 1.5 s: the second is cancelled when the bound is spent,
  // a 503 like any statement past its bound, and the pool goes on.
  started = Date.now();
  const ran: number[] = [];
  const err = await database
    .withReadSnapshot(1_500, async (run) => {
      for (let i = 0; i < 2; i++) {
        await run("SELECT pg_sleep(1)");
        ran.push(i);
      }
    })
    .then(
      () => assert.fail("expected the snapshot's bound to cut the second statement"),
      (e: unknown) => e,
    );
  const tookMs = Date.now() - started;
  assert.ok(err instanceof DatabaseUnavailableError, String(err));
  assert.deepEqual(ran, [0]);
  assert.ok(tookMs >= 1_450 && tookMs < 3_000, `${tookMs} ms`);
  assert.deepEqual((await sql<{ one: number }>`SELECT 1::int8 AS one`.execute(database.db)).rows, [
    { one: 1 },
  ]);
});

// Last in this file: it closes the file's handle (and after() closes it once more).
test("a handle closed twice, or twice at once, closes once and throws nothing", async () => {
  await sql`SELECT 1`.execute(database.db);
  await Promise.all([database.close(), database.close()]);
  await database.close();
  await assert.rejects(sql`SELECT 1`.execute(database.db), "closed");
});
