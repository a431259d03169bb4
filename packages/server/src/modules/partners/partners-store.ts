// Queries on partners and on the replay guard of their signatures. Each takes a db or a
// transaction.

import { type RawBuilder, sql } from "kysely";
import { type Db, preparedMarker } from "../../db/database.ts";
import type { Tx } from "../../db/transaction.ts";

export interface PartnerRow {
  id: string;
  name: string;
  public_key_pem: string | null;
  allowed_ips: string[];
  active: boolean;
  rate_limit_reads: number | null;
  rate_limit_writes: number | null;
  rate_limit_quotes: number | null;
  created_at: string;
  updated_at: string;
}

export async function findPartner(db: Db | Tx, id: string): Promise<PartnerRow | undefined> {
  return db.selectFrom("partners").selectAll().where("id", "=", id).executeTakeFirst();
}

export async function listPartners(db: Db | Tx): Promise<PartnerRow[]> {
  return db.selectFrom("partners").selectAll().orderBy("created_at", "desc").orderBy("id").execute();
}

export async function insertPartner(
  db: Db | Tx,
  row: { id: string; name: string; public_key_pem: string | null; allowed_ips: string[] },
): Promise<PartnerRow> {
  return db.insertInto("partners").values(row).returningAll().executeTakeFirstOrThrow();
}

export async function updatePartner(
  db: Db | Tx,
  id: string,
  changes: Partial<Pick<PartnerRow, "name" | "public_key_pem" | "allowed_ips" | "active">>,
  nowIso: string,
): Promise<PartnerRow | undefined> {
  return db
    .updateTable("partners")
    .set({ ...changes, updated_at: nowIso })
    .where("id", "=", id)
    .returningAll()
    .executeTakeFirst();
}

export interface PartnerKeyRow {
  id: string;
  partner_id: string;
  label: string;
  public_key_pem: string;
  created_at: string;
  retired_at: string | null;
}

/** Every key of a partner, retired ones too, oldest first. */
export async function listPartnerKeys(db: Db | Tx, partnerId: string): Promise<PartnerKeyRow[]> {
  return db
    .selectFrom("partner_keys")
    .selectAll()
    .where("partner_id", "=", partnerId)
    .orderBy("created_at")
    .orderBy("id")
    .execute();
}

/** Locks the partner's row, so that key changes of one partner happen one at a time. */
export async function lockPartner(tx: Tx, id: string): Promise<boolean> {
  const row = await tx
    .selectFrom("partners")
    .select("id")
    .where("id", "=", id)
    .forUpdate()
    .executeTakeFirst();
  return row !== undefined;
}

export async function insertPartnerKey(
  db: Db | Tx,
  row: { id: string; partner_id: string; label: string; public_key_pem: string; created_at: string },
): Promise<PartnerKeyRow> {
  return db.insertInto("partner_keys").values(row).returningAll().executeTakeFirstOrThrow();
}

/** Retires the given active keys of a partner (all of them without `keyId`); returns those retired. */
export async function retirePartnerKeys(
  db: Db | Tx,
  partnerId: string,
  nowIso: string,
  keyId?: string,
): Promise<PartnerKeyRow[]> {
  let q = db
    .updateTable("partner_keys")
    .set({ retired_at: nowIso })
    .where("partner_id", "=", partnerId)
    .where("retired_at", "is", null);
  if (keyId !== undefined) q = q.where("id", "=", keyId);
  return q.returningAll().execute();
}

/**
 * Sets partners.public_key_pem to the partner's newest active key (null without one), for the
 * processes of the version before migration 0012 that read only that column.
 */
export async function mirrorNewestKey(
  db: Db | Tx,
  id: string,
  nowIso: string,
): Promise<PartnerRow | undefined> {
  return db
    .updateTable("partners")
    .set({
      public_key_pem: (eb) =>
        eb
          .selectFrom("partner_keys")
          .select("partner_keys.public_key_pem")
          .where("partner_keys.partner_id", "=", id)
          .where("partner_keys.retired_at", "is", null)
          .orderBy("partner_keys.created_at", "desc")
          .orderBy("partner_keys.id", "desc")
          .limit(1),
      updated_at: nowIso,
    })
    .where("id", "=", id)
    .returningAll()
    .executeTakeFirst();
}

/** What a signed request is judged by: the partner's active keys (newest first), allow-list and state. */
export interface PartnerCredentials {
  id: string;
  public_keys: string[];
  allowed_ips: string[];
  active: boolean;
  /** The operator's rate-limit budgets (requests per minute); null: the default. */
  rate_limit_reads: number | null;
  rate_limit_writes: number | null;
  rate_limit_quotes: number | null;
}

export interface SignatureRecord {
  /** The decoded signature bytes. */
  signature: Uint8Array;
  expiresAtIso: string;
  /** The credentials the signature was accepted by. */
  judgedBy: PartnerCredentials;
}

// The credentials are one row's columns: the partner's active keys, newest first, are kept on its
// row by the database (migration 0030), so a request is judged by one snapshot of its row and its
// keys: a key retired or added is seen by the next request in every process.
// Newest first: after a rotation the partner signs with the new key, which is then tried first.
// The rate-limit budgets come with them: a request's limits cost no statement of their own.
const credentialColumns = sql`p.id, p.allowed_ips, p.active,
  p.rate_limit_reads, p.rate_limit_writes, p.rate_limit_quotes, p.active_keys AS public_keys`;

/**
 * The partner's credentials as one JSON text (null when there is no such partner), for a read's
 * own statement to carry (db/credential-witness.ts): partners.credentials, which the database
 * keeps equal to the JSON of credentialColumns (migration 0030). An uncorrelated subquery:
 * PostgreSQL runs it once per statement, in the statement's snapshot. Text rather than json, so
 * that a statement of many rows costs one JSON.parse (credentialsFromJson), not one per row.
 */
export function credentialsColumn(id: string): RawBuilder<unknown> {
  return sql`(SELECT p.credentials FROM partners p WHERE p.id = ${id})`;
}

/** Credentials as credentialsColumn gives them; undefined for null or a value of another shape. */
export function credentialsFromJson(value: unknown): PartnerCredentials | undefined {
  if (typeof value === "string") {
    try {
      return credentialsFromJson(JSON.parse(value));
    } catch {
      return undefined;
    }
  }
  if (typeof value !== "object" || value === null) return undefined;
  const v = value as Record<string, unknown>;
  const strings = (x: unknown): x is string[] => Array.isArray(x) && x.every((e) => typeof e === "string");
  const budget = (x: unknown): x is number | null => x === null || typeof x === "number";
  if (
    typeof v.id !== "string" ||
    typeof v.active !== "boolean" ||
    !strings(v.public_keys) ||
    !strings(v.allowed_ips) ||
    !budget(v.rate_limit_reads) ||
    !budget(v.rate_limit_writes) ||
    !budget(v.rate_limit_quotes)
  ) {
    return undefined;
  }
  return {
    id: v.id,
    active: v.active,
    public_keys: v.public_keys,
    allowed_ips: v.allowed_ips,
    rate_limit_reads: v.rate_limit_reads,
    rate_limit_writes: v.rate_limit_writes,
    rate_limit_quotes: v.rate_limit_quotes,
  };
}

/**
 * Reads a partner's credentials and, with `record`, records an accepted signature in the same
 * statement, but only while the row still holds the credentials it was accepted by: a partner
 * disabled, re-keyed or given another allow-list since records nothing, and the caller judges again
 * by the row returned. `recorded` is also false when the signature was already recorded (a replay).
 */
export async function readCredentials(
  db: Db | Tx,
  id: string,
  record?: SignatureRecord,
): Promise<{ partner: PartnerCredentials | undefined; recorded: boolean }> {
  if (record === undefined) {
    const { rows } = await sql<PartnerCredentials>`${sql.raw(preparedMarker)}
      SELECT ${credentialColumns} FROM partners p WHERE p.id = ${id}
    `.execute(db);
    return { partner: rows[0], recorded: false };
  }
  const { judgedBy } = record;
  const { rows } = await sql<PartnerCredentials & { recorded: boolean }>`${sql.raw(preparedMarker)}
    WITH p AS (SELECT ${credentialColumns} FROM partners p WHERE p.id = ${id}),
    rec AS (
      INSERT INTO used_signatures (partner_id, signature, expires_at)
      SELECT p.id, ${record.signature}, ${record.expiresAtIso}::timestamptz FROM p
      WHERE p.active AND p.public_keys = ${judgedBy.public_keys}::text[]
        AND p.allowed_ips = ${judgedBy.allowed_ips}::text[]
      ON CONFLICT DO NOTHING
      RETURNING 1
    )
    SELECT p.*, EXISTS (SELECT 1 FROM rec) AS recorded FROM p
  `.execute(db);
  const row = rows[0];
  if (row === undefined) return { partner: undefined, recorded: false };
  const { recorded, ...partner } = row;
  return { partner, recorded };
}

/** What the statement of a change checks and records of the signed request that asks for it. */
export interface SignatureToRecord {
  readonly signature: Uint8Array;
  readonly expiresAtIso: string;
  /** The partner's active keys, newest first, and its allow-list, as the request was judged by. */
  readonly publicKeys: readonly string[];
  readonly allowedIps: readonly string[];
  /** The rate-limit budgets (reads, writes, quotes) the request was taken from; null: the default. */
  readonly budgets: readonly [number | null, number | null, number | null];
}

/**
 * The partner argument of a change's statement: with `signed`, `record_signature(...)` (migration
 * 0018), which records the request's signature and returns the partner's id, or raises. An argument
 * is evaluated before the function it is given to runs, so the record is made, or the statement
 * fails, before the change writes anything.
 */
export function partnerArgument(
  partnerId: string,
  signed: SignatureToRecord | undefined,
): RawBuilder<unknown> {
  if (signed === undefined) return sql`${partnerId}::uuid`;
  const [reads, writes, quotes] = signed.budgets;
  return sql`record_signature(${partnerId}::uuid, ${signed.signature}, ${signed.expiresAtIso}::timestamptz,
    ${signed.publicKeys}::text[], ${signed.allowedIps}::text[],
    ${reads}::integer, ${writes}::integer, ${quotes}::integer)`;
}

/**
 * The signature arguments of a batch's statement (fund_orders(), execute_quotes(); migrations 0024
 * and 0025), one per order: the signature to record (hex) or null, its expiry, and the
 * credentials it was judged by, the keys and allow-lists flattened with each order's count.
 */
export function signatureArrays(signed: readonly (SignatureToRecord | undefined)[]): RawBuilder<unknown> {
  const keys: string[] = [];
  const ips: string[] = [];
  for (const s of signed) {
    if (s === undefined) continue;
    keys.push(...s.publicKeys);
    ips.push(...s.allowedIps);
  }
  return sql`${signed.map((s) => (s === undefined ? null : Buffer.from(s.signature).toString("hex")))}::text[],
    ${signed.map((s) => s?.expiresAtIso ?? null)}::timestamptz[],
    ${keys}::text[], ${signed.map((s) => s?.publicKeys.length ?? 0)}::integer[],
    ${ips}::text[], ${signed.map((s) => s?.allowedIps.length ?? 0)}::integer[],
    ${signed.map((s) => s?.budgets[0] ?? null)}::integer[],
    ${signed.map((s) => s?.budgets[1] ?? null)}::integer[],
    ${signed.map((s) => s?.budgets[2] ?? null)}::integer[]`;
}

/** Sets a partner's rate-limit budgets; `undefined` leaves one as it is, null restores the default. */
export async function updateRateLimits(
  db: Db | Tx,
  id: string,
  changes: { reads?: number | null; writes?: number | null; quotes?: number | null },
  nowIso: string,
): Promise<PartnerRow | undefined> {
  const set: Record<string, number | null | string> = { updated_at: nowIso };
  if (changes.reads !== undefined) set.rate_limit_reads = changes.reads;
  if (changes.writes !== undefined) set.rate_limit_writes = changes.writes;
  if (changes.quotes !== undefined) set.rate_limit_quotes = changes.quotes;
  return db.updateTable("partners").set(set).where("id", "=", id).returningAll().executeTakeFirst();
}

export async function purgeExpiredSignatures(db: Db | Tx, nowIso: string): Promise<number> {
  const r = await db.deleteFrom("used_signatures").where("expires_at", "<", nowIso).executeTakeFirst();
  return Number(r.numDeletedRows);
}
