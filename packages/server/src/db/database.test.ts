// Both drivers return the same JS values: NUMERIC and dates as text, int8 as a number,
// timestamptz as ISO 8601 UTC text with microseconds.

import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { sql } from "kysely";
import { openTestDatabase } from "../testing/harness.ts";
import { type DatabaseHandle, preparedMarker } from "./database.ts";
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

test("a statement marked to be prepared is prepared once per PostgreSQL connection; PGlite runs it as written", async () => {
  await database.db.connection().execute(async (conn) => {
    const marked = (n: number) =>
      sql<{ twice: number }>`${sql.raw(preparedMarker)} SELECT ${n}::int8 * 2 AS twice`.execute(conn);
    for (const n of [1, 2, 3]) assert.deepEqual((await marked(n)).rows, [{ twice: n * 2 }]);
    await sql`SELECT ${4}::int8 * 3 AS plain`.execute(conn);
    const { rows } = await sql<{ name: string; statement: string }>`
      SELECT name, statement FROM pg_prepared_statements ORDER BY name
    `.execute(conn);
    if (database.kind === "postgres") {
      assert.equal(rows.length, 1, JSON.stringify(rows));
      assert.match(rows[0]!.name, /^cp_[0-9a-f]{32}$/);
      assert.ok(rows[0]!.statement.startsWith(`${preparedMarker} SELECT`));
    } else {
      assert.deepEqual(rows, []);
    }
  });
});
