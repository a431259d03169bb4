// The audit trail's queries: one append (inside the caller's transaction) and the paged list.
// The table refuses UPDATE, DELETE and TRUNCATE itself (migration 0016).

import type { Db } from "../../db/database.ts";
import type { Tx } from "../../db/transaction.ts";

export interface AuditRow {
  id: number;
  at: string;
  actor_kind: "operator" | "token" | "system";
  actor_id: string | null;
  actor_email: string | null;
  action: string;
  target_type: string;
  target_id: string;
  before: unknown;
  after: unknown;
  reason: string | null;
}

export type AuditInsert = Omit<AuditRow, "id" | "before" | "after"> & { before: unknown; after: unknown };

export async function insertAudit(tx: Tx | Db, row: AuditInsert): Promise<void> {
  await tx
    .insertInto("audit_log")
    .values({
      ...row,
      before: row.before === null || row.before === undefined ? null : JSON.stringify(row.before),
      after: row.after === null || row.after === undefined ? null : JSON.stringify(row.after),
    })
    .execute();
}

export interface AuditFilter {
  /** An operator's id, or "token" / "system". */
  actor: string | null;
  action: string | null;
  targetType: string | null;
  targetId: string | null;
  from: string | null;
  to: string | null;
}

export async function listAudit(
  db: Db,
  f: AuditFilter,
  page: number,
  pageSize: number,
): Promise<{ rows: AuditRow[]; total: number }> {
  let q = db.selectFrom("audit_log");
  if (f.actor === "token" || f.actor === "system") q = q.where("actor_kind", "=", f.actor);
  else if (f.actor !== null) q = q.where("actor_id", "=", f.actor);
  if (f.action !== null) q = q.where("action", "=", f.action);
  if (f.targetType !== null) q = q.where("target_type", "=", f.targetType);
  if (f.targetId !== null) q = q.where("target_id", "=", f.targetId);
  if (f.from !== null) q = q.where("at", ">=", f.from);
  if (f.to !== null) q = q.where("at", "<=", f.to);
  const [count, rows] = await Promise.all([
    q.select((eb) => eb.fn.countAll<number>().as("n")).executeTakeFirstOrThrow(),
    q
      .selectAll()
      .orderBy("at", "desc")
      .orderBy("id", "desc")
      .limit(pageSize)
      .offset((page - 1) * pageSize)
      .execute(),
  ]);
  return { rows: rows as AuditRow[], total: Number(count.n) };
}

/** Where a keyset page of the trail starts: after this (at, id), newest first. */
export interface AuditCursor {
  at: string;
  id: number;
}

/**
 * One page of the trail (`limit` rows at most) after `after`, newest first, by keyset: each filter
 * has an index in (at, id) order (migration 0016), so a deep page costs what the first one does.
 * `actor` may also be an operator's e-mail address (resolved to its id, so the actor index serves).
 */
export async function listAuditAfter(
  db: Db,
  f: AuditFilter,
  after: AuditCursor | null,
  limit: number,
): Promise<AuditRow[]> {
  let q = db.selectFrom("audit_log");
  if (f.actor === "token" || f.actor === "system") q = q.where("actor_kind", "=", f.actor);
  else if (f.actor?.includes("@") === true) {
    const email = f.actor.toLowerCase();
    q = q.where("actor_id", "=", (eb) =>
      eb.selectFrom("operators").select("operators.id").where("operators.email", "=", email),
    );
  } else if (f.actor !== null) q = q.where("actor_id", "=", f.actor);
  if (f.action !== null) q = q.where("action", "=", f.action);
  if (f.targetType !== null) q = q.where("target_type", "=", f.targetType);
  if (f.targetId !== null) q = q.where("target_id", "=", f.targetId);
  if (f.from !== null) q = q.where("at", ">=", f.from);
  if (f.to !== null) q = q.where("at", "<=", f.to);
  if (after !== null) {
    const { at, id } = after;
    q = q.where((eb) => eb(eb.refTuple("at", "id"), "<", eb.tuple(at, id)));
  }
  const rows = await q.selectAll().orderBy("at", "desc").orderBy("id", "desc").limit(limit).execute();
  return rows as AuditRow[];
}
