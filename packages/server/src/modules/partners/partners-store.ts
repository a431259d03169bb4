// Queries on partners and on the replay guard of their signatures. Each takes a db or a
// transaction.

import type { Db } from "../../db/database.ts";
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

/** Records an accepted signature; false when it was already recorded (a replay). */
export async function recordSignature(
  db: Db | Tx,
  partnerId: string,
  signature: Uint8Array,
  expiresAtIso: string,
): Promise<boolean> {
  const row = await db
    .insertInto("used_signatures")
    .values({ partner_id: partnerId, signature, expires_at: expiresAtIso })
    .onConflict((oc) => oc.doNothing())
    .returning("partner_id")
    .executeTakeFirst();
  return row !== undefined;
}

export async function purgeExpiredSignatures(db: Db | Tx, nowIso: string): Promise<number> {
  const r = await db.deleteFrom("used_signatures").where("expires_at", "<", nowIso).executeTakeFirst();
  return Number(r.numDeletedRows);
}
