// Queries behind the operator's trading changes: pairs, their prices set by hand, and each
// partner's availability, fee rates and VAT percentage. Amounts arrive as bigints at scale 8.

import type { Selectable } from "kysely";
import type { Db } from "../../db/database.ts";
import { moneyFromPg, moneyToPg } from "../../db/numeric.ts";
import type { AssetPairsTable } from "../../db/schema.ts";
import { isoFromMs } from "../../db/time.ts";

export type PairRow = Selectable<AssetPairsTable>;

export interface StoredPairSettings {
  tradable?: boolean;
  minVolume: bigint;
  maxVolume: bigint;
  lifetimeSeconds?: number;
  feeRate?: bigint;
}

export async function pairExists(db: Db, id: string): Promise<boolean> {
  return (
    (await db.selectFrom("asset_pairs").select("id").where("id", "=", id).executeTakeFirst()) !== undefined
  );
}

/** The pair's volume bounds, if the pair exists. */
export async function findPairVolumes(db: Db, id: string): Promise<{ min: bigint; max: bigint } | undefined> {
  const row = await db
    .selectFrom("asset_pairs")
    .select(["min_volume", "max_volume"])
    .where("id", "=", id)
    .executeTakeFirst();
  return row === undefined
    ? undefined
    : { min: moneyFromPg(row.min_volume), max: moneyFromPg(row.max_volume) };
}

/**
 * A new pair, not tradable until priced: it starts pinned, at a placeholder price whose tick is
 * the Unix epoch.
 */
export async function insertPair(
  db: Db,
  p: { id: string; baseId: string; quoteId: string } & StoredPairSettings,
): Promise<PairRow> {
  return db
    .insertInto("asset_pairs")
    .values({
      id: p.id,
      base_id: p.baseId,
      quote_id: p.quoteId,
      buy: "1",
      sell: "1",
      tradable: p.tradable ?? false,
      min_volume: moneyToPg(p.minVolume),
      max_volume: moneyToPg(p.maxVolume),
      ...(p.lifetimeSeconds === undefined ? {} : { lifetime_s: p.lifetimeSeconds }),
      ...(p.feeRate === undefined ? {} : { fee_rate: moneyToPg(p.feeRate) }),
      price_at: "1970-01-01T00:00:00Z",
      price_pinned: true,
    })
    .returningAll()
    .executeTakeFirstOrThrow();
}

export async function updatePair(db: Db, id: string, s: StoredPairSettings): Promise<PairRow> {
  return db
    .updateTable("asset_pairs")
    .set({
      ...(s.tradable === undefined ? {} : { tradable: s.tradable }),
      min_volume: moneyToPg(s.minVolume),
      max_volume: moneyToPg(s.maxVolume),
      ...(s.lifetimeSeconds === undefined ? {} : { lifetime_s: s.lifetimeSeconds }),
      ...(s.feeRate === undefined ? {} : { fee_rate: moneyToPg(s.feeRate) }),
    })
    .where("id", "=", id)
    .returningAll()
    .executeTakeFirstOrThrow();
}

/** Sets buy and sell and pins the pair; the updated row, if the pair exists. */
export async function pinPairPrice(
  db: Db,
  id: string,
  buy: bigint,
  sell: bigint,
  atMs: number,
): Promise<PairRow | undefined> {
  return db
    .updateTable("asset_pairs")
    .set({ buy: moneyToPg(buy), sell: moneyToPg(sell), price_at: isoFromMs(atMs), price_pinned: true })
    .where("id", "=", id)
    .returningAll()
    .executeTakeFirst();
}

export async function partnerExists(db: Db, partnerId: string): Promise<boolean> {
  return (
    (await db.selectFrom("partners").select("id").where("id", "=", partnerId).executeTakeFirst()) !==
    undefined
  );
}

/** Creates or changes the partner's settings for a pair; a null fee rate clears the partner's own. */
export async function upsertPartnerPair(
  db: Db,
  partnerId: string,
  pairId: string,
  s: { available?: boolean; feeRate?: bigint | null },
) {
  const fee = s.feeRate === undefined ? undefined : s.feeRate === null ? null : moneyToPg(s.feeRate);
  return db
    .insertInto("partner_pairs")
    .values({
      partner_id: partnerId,
      pair_id: pairId,
      available: s.available ?? true,
      ...(fee === undefined ? {} : { fee_rate: fee }),
    })
    .onConflict((oc) =>
      // Nothing to change still updates (to the same value), so that the row is returned.
      oc.columns(["partner_id", "pair_id"]).doUpdateSet((eb) => ({
        available: s.available === undefined ? eb.ref("partner_pairs.available") : s.available,
        ...(fee === undefined ? {} : { fee_rate: fee }),
      })),
    )
    .returningAll()
    .executeTakeFirstOrThrow();
}

/** The partner's default fee rate and VAT percentage; the stored values, if the partner exists. */
export async function updatePartnerFees(
  db: Db,
  partnerId: string,
  s: { feeRate?: bigint | null; vatPercentage?: bigint | null },
): Promise<{ fee_rate: string | null; vat_percentage: string | null } | undefined> {
  // The route allows at most 4 decimals for the percentage, so NUMERIC(7,4) stores it exactly.
  const changes: { fee_rate?: string | null; vat_percentage?: string | null } = {};
  if (s.feeRate !== undefined) changes.fee_rate = s.feeRate === null ? null : moneyToPg(s.feeRate);
  if (s.vatPercentage !== undefined)
    changes.vat_percentage = s.vatPercentage === null ? null : moneyToPg(s.vatPercentage);
  const q = db.updateTable("partners").where("id", "=", partnerId);
  return (Object.keys(changes).length === 0 ? q.set({ id: partnerId }) : q.set(changes))
    .returning(["fee_rate", "vat_percentage"])
    .executeTakeFirst();
}

/** The pair's row (for the audit trail's "before"), if it exists. */
export async function findPairRow(db: Db, id: string): Promise<PairRow | undefined> {
  return db.selectFrom("asset_pairs").selectAll().where("id", "=", id).executeTakeFirst();
}

/** The partner's own settings for the pair, if it has any. */
export async function findPartnerPair(db: Db, partnerId: string, pairId: string) {
  return db
    .selectFrom("partner_pairs")
    .selectAll()
    .where("partner_id", "=", partnerId)
    .where("pair_id", "=", pairId)
    .executeTakeFirst();
}

/** The partner's default fee rate and VAT percentage, if the partner exists. */
export async function findPartnerFees(db: Db, partnerId: string) {
  return db
    .selectFrom("partners")
    .select(["fee_rate", "vat_percentage"])
    .where("id", "=", partnerId)
    .executeTakeFirst();
}

/** Every pair, by id (an operator has tens, not thousands). */
export async function listPairRows(db: Db): Promise<PairRow[]> {
  return db.selectFrom("asset_pairs").selectAll().orderBy("id").execute();
}

/** The partner's own settings for each pair it has any for, by pair id. */
export async function listPartnerPairs(db: Db, partnerId: string) {
  return db
    .selectFrom("partner_pairs")
    .selectAll()
    .where("partner_id", "=", partnerId)
    .orderBy("pair_id")
    .execute();
}
