// The roll-up of the partners' orders by day (migration 0026; docs/decisions.md, "An orders page's
// total from kept counts"), its statements: housekeeping's leader (OrdersService.rollDays) writes,
// for each partner, the counts of each day that is over into order_day_counts, a day per
// transaction, and moves the partner's order_days_rolled.until past it. A page's total under a
// range of dates then sums those rows and counts only the orders of the days not rolled
// (orders-store.ts).
//
// The migration says why no order is missed or counted twice: the roll-up of a partner takes its
// lock exclusively, and never rolls a day on or after the day a transaction still running began.
// It rolls none while a session whose transaction start its role cannot see is connected
// (transactionsBegun's `unseen`).

import { sql } from "kysely";
import type { Db } from "../../db/database.ts";
import { inTransaction, type Tx } from "../../db/transaction.ts";

/** The first of the two keys of a partner's roll-up lock (the second: hashtext of its id). */
const rollLockClass = 73_462_019;

/** YYYY-MM-DD of the day after `day`. */
function nextDay(day: string): string {
  const d = new Date(`${day}T00:00:00Z`);
  d.setUTCDate(d.getUTCDate() + 1);
  return d.toISOString().slice(0, 10);
}

/** What the roll-up can know of the transactions running now (transactionsBegun). */
export interface TransactionsBegun {
  /** The database's day (UTC). */
  today: string;
  /** When the oldest transaction still running in another session of this database began (null: none seen). */
  oldest: string | null;
  /**
   * Sessions in this database whose transactions this role cannot see: sessions of another role,
   * when this one neither has that role's privileges nor pg_read_all_stats. pg_stat_activity shows
   * them with no transaction start; one of them may be writing an order of a day about to be
   * rolled. Replication's senders, which write nothing, are not among them, nor PostgreSQL's own
   * processes (autovacuum and the like have no role).
   */
  unseen: number;
}

/** The database's day, and the transactions running in other sessions as far as they can be seen. */
export async function transactionsBegun(db: Db): Promise<TransactionsBegun> {
  // Only sessions of this database: no other can write its orders (a backup of another database,
  // one transaction for hours, holds nothing back).
  const { rows } = await sql<TransactionsBegun>`
    WITH here AS (SELECT d.oid FROM pg_database d WHERE d.datname = current_database())
    SELECT (now() AT TIME ZONE 'UTC')::date AS today,
           (SELECT min(a.xact_start)::text FROM pg_stat_activity a
             WHERE a.datid = (SELECT oid FROM here) AND a.pid <> pg_backend_pid()
               AND a.xact_start IS NOT NULL AND a.backend_type = 'client backend') AS oldest,
           (SELECT count(*)::int FROM pg_stat_activity a
             WHERE a.datid = (SELECT oid FROM here)
               AND a.pid <> pg_backend_pid() AND a.usesysid IS NOT NULL
               AND NOT pg_has_role(a.usesysid, 'USAGE') AND NOT pg_has_role('pg_read_all_stats', 'USAGE')
               AND a.pid NOT IN (SELECT r.pid FROM pg_stat_replication r WHERE r.pid IS NOT NULL)) AS unseen`.execute(
    db,
  );
  const row = rows[0];
  if (row === undefined) throw new Error("the database gave no day");
  return row;
}

/**
 * The day before which days may be rolled now: the database's day, or the day on which the oldest
 * transaction still running began, whichever is earlier. An order the service writes is of its
 * transaction's day, and takes no lock (migration 0026): no such order can fall in a day before
 * both. `until` is null while sessions this role cannot see are connected (`unseen`): when their
 * transactions began is not known, so no day may be rolled.
 */
export async function rollableUntil(db: Db): Promise<{ until: string | null; unseen: number }> {
  const { today, oldest, unseen } = await transactionsBegun(db);
  if (unseen > 0) return { until: null, unseen };
  if (oldest === null) return { until: today, unseen };
  const { rows } = await sql<{ day: string }>`
    SELECT least(${today}::date, (${oldest}::timestamptz AT TIME ZONE 'UTC')::date) AS day`.execute(db);
  return { until: rows[0]?.day ?? today, unseen };
}

/** The partners whose days are not all rolled up to `until`, by id. */
export async function partnersBehind(db: Db, until: string): Promise<string[]> {
  const rows = await db
    .selectFrom("partners as p")
    .leftJoin("order_days_rolled as r", "r.partner_id", "p.id")
    .where((eb) => eb.or([eb("r.until", "is", null), eb("r.until", "<", until)]))
    .select("p.id")
    .orderBy("p.id")
    .execute();
  return rows.map((r) => r.id);
}

/**
 * In a transaction of its own, under the partner's lock: counts the partner's first day with
 * orders not yet rolled, when it is before `until`, and rolls the partner up to the day after it
 * ("rolled"); with no such day, up to `until` ("done").
 */
export function rollNextDay(db: Db, partnerId: string, until: string): Promise<"rolled" | "done"> {
  return inTransaction(db, (tx) => rollNextDayIn(tx, partnerId, until));
}

async function rollNextDayIn(tx: Tx, partnerId: string, until: string): Promise<"rolled" | "done"> {
  await sql`SELECT pg_advisory_xact_lock(${rollLockClass}, hashtext(${partnerId}::text))`.execute(tx);
  const rolled = await tx
    .selectFrom("order_days_rolled")
    .where("partner_id", "=", partnerId)
    .select("until")
    .executeTakeFirst();
  if (rolled !== undefined && rolled.until >= until) return "done";
  // The first order on or after the first day not rolled: one probe of orders_partner_created.
  const first = await sql<{ day: string }>`
    SELECT (o.created_at AT TIME ZONE 'UTC')::date AS day FROM orders o
     WHERE o.partner_id = ${partnerId}
       ${rolled === undefined ? sql`` : sql`AND o.created_at >= (${rolled.until}::date::timestamp AT TIME ZONE 'UTC')`}
     ORDER BY o.created_at, o.id LIMIT 1`.execute(tx);
  const day = first.rows[0]?.day;
  const rollTo = async (to: string) => {
    await tx
      .insertInto("order_days_rolled")
      .values({ partner_id: partnerId, until: to })
      .onConflict((oc) => oc.column("partner_id").doUpdateSet({ until: to }))
      .execute();
  };
  if (day === undefined || day >= until) {
    await rollTo(until);
    return "done";
  }
  // No row of a day not rolled exists (the trigger writes only days rolled): a conflict here is a
  // broken count, and fails the roll-up rather than adding to it.
  await sql`
    INSERT INTO order_day_counts (partner_id, day, status, source, orders)
    SELECT o.partner_id, ${day}::date, o.status, o.source, count(*) FROM orders o
     WHERE o.partner_id = ${partnerId}
       AND o.created_at >= (${day}::date::timestamp AT TIME ZONE 'UTC')
       AND o.created_at < ((${day}::date + 1)::timestamp AT TIME ZONE 'UTC')
     GROUP BY o.partner_id, o.status, o.source`.execute(tx);
  await rollTo(nextDay(day));
  return "rolled";
}
