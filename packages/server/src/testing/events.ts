// The event feed in tests. On PostgreSQL the feed serves an event once every transaction older than
// it has ended, in the whole cluster (migration 0013): another test's transaction still open can
// hold a just-committed event back for a moment. feedSettled waits (bounded) until every event
// already committed is served, so that a test reading the feed right after a change sees it.

import { setTimeout as delay } from "node:timers/promises";
import { sql } from "kysely";
import type { Db } from "../db/database.ts";

export async function feedSettled(db: Db, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const { rows } = await sql<{ settled: boolean }>`
      SELECT coalesce(max(txid) < pg_snapshot_xmin(pg_current_snapshot()), true) AS settled FROM events
    `.execute(db);
    if (rows[0]?.settled === true) return;
    if (Date.now() > deadline) throw new Error("the event feed did not catch up");
    await delay(5);
  }
}
