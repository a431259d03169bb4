// Queries on partners and on the replay guard of their signatures. Each takes a db or a
// transaction.

import { sql } from "kysely";
import { type Db, preparedMarker } from "../../db/database.ts";
import type { Tx } from "../../db/transaction.ts";

export interface PartnerRow {
  id: string;
  name: string;
  public_key_pem: string | null;
  allowed_ips: string[];
  active: boolean;
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

/** What a signed request is judged by: the partner's key, allow-list and state. */
export type PartnerCredentials = Pick<PartnerRow, "id" | "public_key_pem" | "allowed_ips" | "active">;

export interface SignatureRecord {
  /** The decoded signature bytes. */
  signature: Uint8Array;
  expiresAtIso: string;
  /** The credentials the signature was accepted by. */
  judgedBy: PartnerCredentials;
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
      SELECT id, public_key_pem, allowed_ips, active FROM partners WHERE id = ${id}
    `.execute(db);
    return { partner: rows[0], recorded: false };
  }
  const { judgedBy } = record;
  const { rows } = await sql<PartnerCredentials & { recorded: boolean }>`${sql.raw(preparedMarker)}
    WITH p AS (SELECT id, public_key_pem, allowed_ips, active FROM partners WHERE id = ${id}),
    rec AS (
      INSERT INTO used_signatures (partner_id, signature, expires_at)
      SELECT p.id, ${record.signature}, ${record.expiresAtIso}::timestamptz FROM p
      WHERE p.active AND p.public_key_pem = ${judgedBy.public_key_pem}
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

export async function purgeExpiredSignatures(db: Db | Tx, nowIso: string): Promise<number> {
  const r = await db.deleteFrom("used_signatures").where("expires_at", "<", nowIso).executeTakeFirst();
  return Number(r.numDeletedRows);
}
