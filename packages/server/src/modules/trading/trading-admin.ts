// Operator changes for trading: pair settings, prices set by hand (which pin the pair until the
// feed is resumed), per-partner availability and fee rates, and the partner's VAT percentage.
// Expected failures are values; decimal inputs arrive as validated bigints at scale 8.

import type { Db } from "../../db/database.ts";
import { moneyFromPg, moneyToPg } from "../../db/numeric.ts";
import { isoFromMs } from "../../db/time.ts";
import type { Clock } from "../../platform/clock.ts";
import { findAsset } from "../catalog/catalog-store.ts";

export type TradingAdminFailure =
  | "pair_not_found"
  | "partner_not_found"
  | "invalid_pair_id"
  | "unknown_asset"
  | "volume_bounds"
  | "price_order";

export type AdminResult<T> = { ok: true; value: T } | { ok: false; error: TradingAdminFailure };

export interface PairSettings {
  tradable?: boolean;
  minVolume?: bigint;
  maxVolume?: bigint;
  lifetimeSeconds?: number;
  feeRate?: bigint;
}

async function pairRow(db: Db, id: string) {
  return db.selectFrom("asset_pairs").selectAll().where("id", "=", id).executeTakeFirst();
}

export type PairRow = NonNullable<Awaited<ReturnType<typeof pairRow>>>;

/**
 * Creates the pair (not tradable until priced: it starts pinned, at a placeholder price whose tick
 * is the Unix epoch, so it answers 4001 until `price set`) or changes the given settings.
 */
export async function upsertPair(db: Db, id: string, s: PairSettings): Promise<AdminResult<PairRow>> {
  const m = /^([A-Z0-9]{2,10})-([A-Z0-9]{2,10})$/.exec(id);
  if (m === null || m[1] === m[2]) return { ok: false, error: "invalid_pair_id" };
  const existing = await pairRow(db, id);
  const min = s.minVolume ?? (existing ? moneyFromPg(existing.min_volume) : 0n);
  const max = s.maxVolume ?? (existing ? moneyFromPg(existing.max_volume) : 10n ** 20n);
  if (min < 0n || max < min) return { ok: false, error: "volume_bounds" };
  if (existing === undefined) {
    if ((await findAsset(db, m[1]!)) === undefined || (await findAsset(db, m[2]!)) === undefined) {
      return { ok: false, error: "unknown_asset" };
    }
    const row = await db
      .insertInto("asset_pairs")
      .values({
        id,
        base_id: m[1]!,
        quote_id: m[2]!,
        buy: "1",
        sell: "1",
        tradable: s.tradable ?? false,
        min_volume: moneyToPg(min),
        max_volume: moneyToPg(max),
        ...(s.lifetimeSeconds === undefined ? {} : { lifetime_s: s.lifetimeSeconds }),
        ...(s.feeRate === undefined ? {} : { fee_rate: moneyToPg(s.feeRate) }),
        price_at: "1970-01-01T00:00:00Z",
        price_pinned: true,
      })
      .returningAll()
      .executeTakeFirstOrThrow();
    return { ok: true, value: row };
  }
  const row = await db
    .updateTable("asset_pairs")
    .set({
      ...(s.tradable === undefined ? {} : { tradable: s.tradable }),
      min_volume: moneyToPg(min),
      max_volume: moneyToPg(max),
      ...(s.lifetimeSeconds === undefined ? {} : { lifetime_s: s.lifetimeSeconds }),
      ...(s.feeRate === undefined ? {} : { fee_rate: moneyToPg(s.feeRate) }),
    })
    .where("id", "=", id)
    .returningAll()
    .executeTakeFirstOrThrow();
  return { ok: true, value: row };
}

/** Sets buy and sell by hand and pins the pair (the simulated feed leaves it alone). */
export async function setPrice(
  db: Db,
  clock: Clock,
  id: string,
  buy: bigint,
  sell: bigint,
  atMs: number | null,
): Promise<AdminResult<PairRow>> {
  if (buy <= 0n || sell <= 0n || buy < sell) return { ok: false, error: "price_order" };
  const row = await db
    .updateTable("asset_pairs")
    .set({
      buy: moneyToPg(buy),
      sell: moneyToPg(sell),
      price_at: isoFromMs(atMs ?? clock.nowMs()),
      price_pinned: true,
    })
    .where("id", "=", id)
    .returningAll()
    .executeTakeFirst();
  return row ? { ok: true, value: row } : { ok: false, error: "pair_not_found" };
}

/** Hands the pair back to the feed. */
export async function resumeFeed(db: Db, id: string): Promise<AdminResult<PairRow>> {
  const row = await db
    .updateTable("asset_pairs")
    .set({ price_pinned: false })
    .where("id", "=", id)
    .returningAll()
    .executeTakeFirst();
  return row ? { ok: true, value: row } : { ok: false, error: "pair_not_found" };
}

export interface PartnerPairSettings {
  available?: boolean;
  /** null clears the partner's own rate for the pair */
  feeRate?: bigint | null;
}

export async function setPartnerPair(
  db: Db,
  partnerId: string,
  pairId: string,
  s: PartnerPairSettings,
): Promise<
  AdminResult<{ partner_id: string; pair_id: string; available: boolean; fee_rate: string | null }>
> {
  if (
    (await db.selectFrom("partners").select("id").where("id", "=", partnerId).executeTakeFirst()) ===
    undefined
  ) {
    return { ok: false, error: "partner_not_found" };
  }
  if ((await pairRow(db, pairId)) === undefined) return { ok: false, error: "pair_not_found" };
  const fee = s.feeRate === undefined ? undefined : s.feeRate === null ? null : moneyToPg(s.feeRate);
  const row = await db
    .insertInto("partner_pairs")
    .values({
      partner_id: partnerId,
      pair_id: pairId,
      available: s.available ?? true,
      ...(fee === undefined ? {} : { fee_rate: fee }),
    })
    .onConflict((oc) =>
      oc.columns(["partner_id", "pair_id"]).doUpdateSet({
        ...(s.available === undefined ? {} : { available: s.available }),
        ...(fee === undefined ? {} : { fee_rate: fee }),
      }),
    )
    .returningAll()
    .executeTakeFirstOrThrow();
  return { ok: true, value: row };
}

/** The partner's default fee rate (all pairs without their own) and VAT percentage. */
export async function setPartnerFees(
  db: Db,
  partnerId: string,
  s: { feeRate?: bigint | null; vatPercentage?: bigint | null },
): Promise<AdminResult<{ fee_rate: string | null; vat_percentage: string | null }>> {
  // The route allows at most 4 decimals for the percentage, so NUMERIC(7,4) stores it exactly.
  const changes: { fee_rate?: string | null; vat_percentage?: string | null } = {};
  if (s.feeRate !== undefined) changes.fee_rate = s.feeRate === null ? null : moneyToPg(s.feeRate);
  if (s.vatPercentage !== undefined)
    changes.vat_percentage = s.vatPercentage === null ? null : moneyToPg(s.vatPercentage);
  const q = db.updateTable("partners").where("id", "=", partnerId);
  const row = await (Object.keys(changes).length === 0 ? q.set({ id: partnerId }) : q.set(changes))
    .returning(["fee_rate", "vat_percentage"])
    .executeTakeFirst();
  return row ? { ok: true, value: row } : { ok: false, error: "partner_not_found" };
}
