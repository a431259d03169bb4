// The event feed in tests. On PostgreSQL the feed serves an event once every transaction older than
// it has ended, in the whole cluster (migration 0013): another test's transaction still open can
// hold a just-committed event back for a moment. feedSettled waits (bounded) until every event
// already committed is served, so that a test reading the feed right after a change sees it.

import { setTimeout as delay } from "node:timers/promises";
import { sql } from "kysely";
import pg from "pg";
import type { Db } from "../db/database.ts";

const settledSql =
  "SELECT coalesce(max(txid) < pg_snapshot_xmin(pg_current_snapshot()), true) AS settled FROM events";

async function untilSettled(settled: () => Promise<boolean>, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await settled()) return;
    if (Date.now() > deadline) throw new Error("the event feed did not catch up");
    await delay(5);
  }
}

/** Waits until the feed of `db` serves every event already committed. */
export async function feedSettled(db: Db, timeoutMs = 30_000): Promise<void> {
  await untilSettled(
    async () => (await sql.raw<{ settled: boolean }>(settledSql).execute(db)).rows[0]?.settled === true,
    timeoutMs,
  );
}

/** The same, for a database that processes of their own serve: reached by its URL. */
export async function feedSettledAt(databaseUrl: string, timeoutMs = 30_000): Promise<void> {
  const client = new pg.Client({ connectionString: databaseUrl });
  client.on("error", () => {});
  await client.connect();
  try {
    await untilSettled(
      async () => (await client.query<{ settled: boolean }>(settledSql)).rows[0]?.settled === true,
      timeoutMs,
    );
  } finally {
    await client.end();
  }
}
