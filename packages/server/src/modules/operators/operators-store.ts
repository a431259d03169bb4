// Queries on operator accounts, their sessions, sign-in links and refused sign-ins. Each takes a
// db or a transaction.

import type { Db } from "../../db/database.ts";
import type { OperatorRole } from "../../db/schema.ts";
import type { Tx } from "../../db/transaction.ts";

export interface OperatorRow {
  id: string;
  email: string;
  role: OperatorRole;
  password_hash: string | null;
  active: boolean;
  created_at: string;
  updated_at: string;
  last_sign_in_at: string | null;
}

export interface SessionRow {
  token_sha256: string;
  operator_id: string;
  csrf_token: string;
  created_at: string;
  last_seen_at: string;
}

/** The new account, or undefined when the e-mail is taken. */
export async function insertOperator(
  db: Db | Tx,
  row: { id: string; email: string; role: OperatorRole; password_hash: string | null; created_at: string },
): Promise<OperatorRow | undefined> {
  return db
    .insertInto("operators")
    .values({ ...row, updated_at: row.created_at })
    .onConflict((oc) => oc.column("email").doNothing())
    .returningAll()
    .executeTakeFirst();
}

export async function findOperator(db: Db | Tx, id: string): Promise<OperatorRow | undefined> {
  return db.selectFrom("operators").selectAll().where("id", "=", id).executeTakeFirst();
}

export async function findOperatorByEmail(db: Db | Tx, email: string): Promise<OperatorRow | undefined> {
  return db.selectFrom("operators").selectAll().where("email", "=", email).executeTakeFirst();
}

/** The row locked for the rest of the transaction. */
export async function lockOperator(tx: Tx, id: string): Promise<OperatorRow | undefined> {
  return tx.selectFrom("operators").selectAll().where("id", "=", id).forUpdate().executeTakeFirst();
}

export async function listOperators(db: Db | Tx): Promise<OperatorRow[]> {
  return db.selectFrom("operators").selectAll().orderBy("email").execute();
}

export async function updateOperator(
  db: Db | Tx,
  id: string,
  changes: Partial<Pick<OperatorRow, "role" | "active" | "password_hash" | "last_sign_in_at">>,
  nowIso: string,
): Promise<OperatorRow | undefined> {
  return db
    .updateTable("operators")
    .set({ ...changes, updated_at: nowIso })
    .where("id", "=", id)
    .returningAll()
    .executeTakeFirst();
}

export async function insertSession(db: Db | Tx, row: SessionRow): Promise<void> {
  await db.insertInto("operator_sessions").values(row).execute();
}

/** The session and its operator, in one read. */
export async function findSession(
  db: Db | Tx,
  tokenSha256: string,
): Promise<{ session: SessionRow; operator: OperatorRow } | undefined> {
  const row = await db
    .selectFrom("operator_sessions as s")
    .innerJoin("operators as o", "o.id", "s.operator_id")
    .select([
      "s.token_sha256",
      "s.operator_id",
      "s.csrf_token",
      "s.created_at as session_created_at",
      "s.last_seen_at",
      "o.id",
      "o.email",
      "o.role",
      "o.password_hash",
      "o.active",
      "o.created_at",
      "o.updated_at",
      "o.last_sign_in_at",
    ])
    .where("s.token_sha256", "=", tokenSha256)
    .executeTakeFirst();
  if (row === undefined) return undefined;
  return {
    session: {
      token_sha256: row.token_sha256,
      operator_id: row.operator_id,
      csrf_token: row.csrf_token,
      created_at: row.session_created_at,
      last_seen_at: row.last_seen_at,
    },
    operator: {
      id: row.id,
      email: row.email,
      role: row.role,
      password_hash: row.password_hash,
      active: row.active,
      created_at: row.created_at,
      updated_at: row.updated_at,
      last_sign_in_at: row.last_sign_in_at,
    },
  };
}

export async function touchSession(db: Db | Tx, tokenSha256: string, nowIso: string): Promise<void> {
  await db
    .updateTable("operator_sessions")
    .set({ last_seen_at: nowIso })
    .where("token_sha256", "=", tokenSha256)
    .execute();
}

export async function deleteSession(db: Db | Tx, tokenSha256: string): Promise<void> {
  await db.deleteFrom("operator_sessions").where("token_sha256", "=", tokenSha256).execute();
}

/** Ends every session of the operator (disabled, role changed, password changed). */
export async function deleteOperatorSessions(db: Db | Tx, operatorId: string): Promise<void> {
  await db.deleteFrom("operator_sessions").where("operator_id", "=", operatorId).execute();
}

export async function insertSignInLink(
  db: Db | Tx,
  row: { token_sha256: string; operator_id: string; created_at: string; expires_at: string },
): Promise<void> {
  await db.insertInto("operator_sign_in_links").values(row).execute();
}

/**
 * Marks the link used and answers its operator, when it exists, is unused and has not expired;
 * one statement, so a link signs in once even when it is followed twice at the same moment.
 */
export async function useSignInLink(
  db: Db | Tx,
  tokenSha256: string,
  nowIso: string,
): Promise<string | undefined> {
  const row = await db
    .updateTable("operator_sign_in_links")
    .set({ used_at: nowIso })
    .where("token_sha256", "=", tokenSha256)
    .where("used_at", "is", null)
    .where("expires_at", ">", nowIso)
    .returning("operator_id")
    .executeTakeFirst();
  return row?.operator_id;
}

export async function countSignInFailures(db: Db | Tx, keys: string[], sinceIso: string) {
  const rows = await db
    .selectFrom("operator_sign_in_failures")
    .select(["key", (eb) => eb.fn.countAll<string>().as("n")])
    .where("key", "in", keys)
    .where("at", ">", sinceIso)
    .groupBy("key")
    .execute();
  return new Map(rows.map((r) => [r.key, Number(r.n)]));
}

/** Records refused sign-ins under each key and forgets that key's ones older than `sinceIso`. */
export async function recordSignInFailure(
  db: Db | Tx,
  keys: string[],
  nowIso: string,
  sinceIso: string,
): Promise<void> {
  await db
    .deleteFrom("operator_sign_in_failures")
    .where("key", "in", keys)
    .where("at", "<=", sinceIso)
    .execute();
  await db
    .insertInto("operator_sign_in_failures")
    .values(keys.map((key) => ({ key, at: nowIso })))
    .execute();
}

export async function clearSignInFailures(db: Db | Tx, key: string): Promise<void> {
  await db.deleteFrom("operator_sign_in_failures").where("key", "=", key).execute();
}

/**
 * Deletes what can no longer open anything: sessions idle since `idleBeforeIso` or started before
 * `startedBeforeIso`, sign-in links expired before `nowIso` (used or not), and refused sign-ins
 * older than `failuresBeforeIso`. Counts what went.
 */
export async function purgeEndedOperatorRecords(
  db: Db | Tx,
  bounds: { nowIso: string; idleBeforeIso: string; startedBeforeIso: string; failuresBeforeIso: string },
): Promise<{ sessions: number; links: number; failures: number }> {
  const sessions = await db
    .deleteFrom("operator_sessions")
    .where((eb) =>
      eb.or([
        eb("last_seen_at", "<=", bounds.idleBeforeIso),
        eb("created_at", "<=", bounds.startedBeforeIso),
      ]),
    )
    .executeTakeFirst();
  const links = await db
    .deleteFrom("operator_sign_in_links")
    .where("expires_at", "<=", bounds.nowIso)
    .executeTakeFirst();
  const failures = await db
    .deleteFrom("operator_sign_in_failures")
    .where("at", "<=", bounds.failuresBeforeIso)
    .executeTakeFirst();
  return {
    sessions: Number(sessions.numDeletedRows),
    links: Number(links.numDeletedRows),
    failures: Number(failures.numDeletedRows),
  };
}
