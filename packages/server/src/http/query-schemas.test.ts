// Query datetimes (http/query-schemas.ts): every ISO 8601 offset is read as its instant, given to
// PostgreSQL in UTC, so that an offset PostgreSQL itself would refuse (past ±15:59) is no 500.

import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { sql } from "kysely";
import type { DatabaseHandle } from "../db/database.ts";
import { openTestDatabase } from "../testing/harness.ts";
import { queryDatetime } from "./query-schemas.ts";

let database: DatabaseHandle;
before(async () => {
  database = await openTestDatabase();
});
after(async () => {
  await database.close();
});

test("a query datetime is its instant in UTC, microseconds kept, whatever its offset", async () => {
  for (const [given, utc] of [
    ["2026-01-02", "2026-01-02 00:00:00.000000+00:00"],
    ["2026-01-02T03:04", "2026-01-02 03:04:00.000000+00:00"],
    ["2026-01-02 03:04:05.5Z", "2026-01-02 03:04:05.500000+00:00"],
    ["2026-01-02T03:04:05.123456+05:30", "2026-01-01 21:34:05.123456+00:00"],
    ["2026-01-02T03:04:05-0800", "2026-01-02 11:04:05.000000+00:00"],
    ["2026-03-01T00:30:00+01:00", "2026-02-28 23:30:00.000000+00:00"],
    ["2024-03-01T00:30:00+01:00", "2024-02-29 23:30:00.000000+00:00"],
    // Past what PostgreSQL takes as a displacement, and across the ends of the years it reads.
    ["9999-12-31T23:59:59-23:59", "10000-01-01 23:58:59.000000+00:00"],
    ["0100-01-01T00:00:00+23:59", "0099-12-31 00:01:00.000000+00:00"],
  ] as const) {
    assert.equal(queryDatetime(given), utc, given);
    // PostgreSQL (or PGlite) reads it as that instant.
    const { rows } = await sql<{ read: string }>`
      SELECT to_char(${utc}::timestamptz AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS.US') AS read`.execute(
      database.db,
    );
    assert.equal(rows[0]?.read, utc.slice(0, -"+00:00".length), given);
  }
});

test("what is no instant is null: a 30th of February, an hour 24, an offset past 23:59", () => {
  for (const given of [
    "2026-02-30",
    "2026-13-01",
    "2026-01-02T24:00",
    "2026-01-02T23:60",
    "2026-01-02T23:59:60",
    "2026-01-02T03:04+24:00",
    "2026-01-02T03:04+05:60",
    "0099-12-31",
    "2026-01-02T03:04:05.1234567Z",
    "20260102",
  ]) {
    assert.equal(queryDatetime(given), null, given);
  }
});
