// Operator changes for trading: pair settings, prices set by hand (which pin the pair until the
// feed is resumed), per-partner availability and fee rates, and the partner's VAT percentage.
// Expected failures are values; decimal inputs arrive as validated bigints at scale 8.

import { formatDecimal } from "@counterpart/protocol";
import type { Db } from "../../db/database.ts";
import { inTransaction } from "../../db/transaction.ts";
import type { Clock } from "../../platform/clock.ts";
import { type AuditNote, missingReason, recordAudit } from "../audit/index.ts";
import { findAsset, type PriceFeed } from "../catalog/index.ts";
import {
  findPairRow,
  findPairVolumes,
  findPartnerFees,
  findPartnerPair,
  insertPair,
  listPairRows,
  listPartnerPairs,
  pairExists,
  partnerExists,
  pinPairPrice,
  updatePair,
  updatePartnerFees,
  upsertPartnerPair,
} from "./trading-admin-store.ts";
import type { AdminPairView, AdminPartnerFeesView, AdminPartnerPairView } from "./trading-admin-views.ts";

export type { PairRow } from "./trading-admin-store.ts";

export type TradingAdminFailure =
  | "pair_not_found"
  | "partner_not_found"
  | "invalid_pair_id"
  | "unknown_asset"
  | "volume_bounds"
  | "price_order"
  | "price_in_future"
  | "no_price_feed"
  | "reason_required";

/**
 * How far past the service's clock a price pinned by hand may be stamped: a clock a little ahead
 * is forgiven, a price from the future is not. A price's tick decides when it goes stale
 * (`PRICE_STALE_AFTER_S` after it), so a tick an hour ahead would keep an operator's price fresh
 * for an hour after the feed would have let it lapse, and year 9999 for ever.
 */
export const priceAheadToleranceMs = 5_000;

export type AdminResult<T> = { ok: true; value: T } | { ok: false; error: TradingAdminFailure };

export interface PairSettings {
  tradable?: boolean;
  minVolume?: bigint;
  maxVolume?: bigint;
  lifetimeSeconds?: number;
  feeRate?: bigint;
}

export interface PartnerPairSettings {
  available?: boolean;
  /** null clears the partner's own rate for the pair */
  feeRate?: bigint | null;
}

export class TradingAdminService {
  readonly #db: Db;
  readonly #clock: Clock;
  /** The price feed, or null when prices come only from the operator (PRICE_FEED=manual). */
  readonly #feed: PriceFeed | null;
  /** The quote lifetime of a pair created without its own (QUOTE_LIFETIME_S). */
  readonly #defaultLifetimeSeconds: number;

  constructor(db: Db, clock: Clock, feed: PriceFeed | null, defaultLifetimeSeconds: number) {
    this.#db = db;
    this.#clock = clock;
    this.#feed = feed;
    this.#defaultLifetimeSeconds = defaultLifetimeSeconds;
  }

  /**
   * Creates the pair (not tradable until priced: it starts pinned, at a placeholder price whose
   * tick is the Unix epoch, so it answers 4001 until `price set`) or changes the given settings.
   */
  async upsertPair(id: string, s: PairSettings, note: AuditNote): Promise<AdminResult<AdminPairView>> {
    const m = /^([A-Z0-9]{2,10})-([A-Z0-9]{2,10})$/.exec(id);
    if (m === null || m[1] === m[2]) return { ok: false, error: "invalid_pair_id" };
    return inTransaction(this.#db, async (tx): Promise<AdminResult<AdminPairView>> => {
      const before = await findPairRow(tx, id);
      const result = await this.#upsertPair(tx, id, m, s);
      if (result.ok) {
        await recordAudit(tx, this.#clock, note, {
          action: before === undefined ? "pair.create" : "pair.update",
          targetType: "pair",
          targetId: id,
          before: before ?? null,
          after: result.value,
        });
      }
      return result;
    });
  }

  async #upsertPair(
    db: Db,
    id: string,
    m: RegExpExecArray,
    s: PairSettings,
  ): Promise<AdminResult<AdminPairView>> {
    const existing = await findPairVolumes(db, id);
    const min = s.minVolume ?? existing?.min ?? 0n;
    const max = s.maxVolume ?? existing?.max ?? 10n ** 20n;
    if (min < 0n || max < min) return { ok: false, error: "volume_bounds" };
    const settings = {
      ...(s.tradable === undefined ? {} : { tradable: s.tradable }),
      minVolume: min,
      maxVolume: max,
      ...(s.lifetimeSeconds === undefined ? {} : { lifetimeSeconds: s.lifetimeSeconds }),
      ...(s.feeRate === undefined ? {} : { feeRate: s.feeRate }),
    };
    if (existing === undefined) {
      const [baseId, quoteId] = [m[1]!, m[2]!];
      if ((await findAsset(db, baseId)) === undefined || (await findAsset(db, quoteId)) === undefined) {
        return { ok: false, error: "unknown_asset" };
      }
      const lifetimeSeconds = s.lifetimeSeconds ?? this.#defaultLifetimeSeconds;
      return { ok: true, value: await insertPair(db, { id, baseId, quoteId, ...settings, lifetimeSeconds }) };
    }
    return { ok: true, value: await updatePair(db, id, settings) };
  }

  /**
   * Sets buy and sell by hand and pins the pair (the simulated feed leaves it alone). A pin needs
   * a reason (the audit trail).
   */
  async setPrice(
    id: string,
    buy: bigint,
    sell: bigint,
    atMs: number | null,
    note: AuditNote,
  ): Promise<AdminResult<AdminPairView>> {
    if (buy <= 0n || sell <= 0n || buy < sell) return { ok: false, error: "price_order" };
    if (atMs !== null && atMs > this.#clock.nowMs() + priceAheadToleranceMs) {
      return { ok: false, error: "price_in_future" };
    }
    if (missingReason(note)) return { ok: false, error: "reason_required" };
    return inTransaction(this.#db, async (tx): Promise<AdminResult<AdminPairView>> => {
      const before = await findPairRow(tx, id);
      const row = await pinPairPrice(tx, id, buy, sell, atMs ?? this.#clock.nowMs());
      if (row === undefined) return { ok: false, error: "pair_not_found" };
      await recordAudit(tx, this.#clock, note, {
        action: "pair.price_pin",
        targetType: "pair",
        targetId: id,
        before: before ?? null,
        after: row,
      });
      return { ok: true, value: row };
    });
  }

  /**
   * Hands the pair back to the feed, which writes its current price for the pair in the same
   * statement, so a quote right after it is priced by the feed, not refused as stale (4001). With
   * no feed (PRICE_FEED=manual) there is nothing to hand it back to, and no honest fresh price:
   * refused, nothing changed (docs/decisions.md, "Prices").
   */
  async resumeFeed(id: string, note: AuditNote): Promise<AdminResult<AdminPairView>> {
    if (this.#feed === null) {
      return { ok: false, error: (await pairExists(this.#db, id)) ? "no_price_feed" : "pair_not_found" };
    }
    const row = await this.#feed.resume(id, async (tx, before, after) => {
      await recordAudit(tx, this.#clock, note, {
        action: "pair.price_resume",
        targetType: "pair",
        targetId: id,
        before: { buy: formatDecimal(before.buy), sell: formatDecimal(before.sell), price_pinned: true },
        after,
      });
    });
    return row ? { ok: true, value: row } : { ok: false, error: "pair_not_found" };
  }

  async setPartnerPair(
    partnerId: string,
    pairId: string,
    s: PartnerPairSettings,
    note: AuditNote,
  ): Promise<AdminResult<AdminPartnerPairView>> {
    return inTransaction(this.#db, async (tx): Promise<AdminResult<AdminPartnerPairView>> => {
      if (!(await partnerExists(tx, partnerId))) return { ok: false, error: "partner_not_found" };
      if (!(await pairExists(tx, pairId))) return { ok: false, error: "pair_not_found" };
      const before = await findPartnerPair(tx, partnerId, pairId);
      const after = await upsertPartnerPair(tx, partnerId, pairId, s);
      await recordAudit(tx, this.#clock, note, {
        action: "partner.pair_settings",
        targetType: "partner",
        targetId: partnerId,
        before: before ?? null,
        after,
      });
      return { ok: true, value: after };
    });
  }

  /** Every pair with its settings and current prices (the console's catalog page). */
  async listPairs(): Promise<AdminPairView[]> {
    return listPairRows(this.#db);
  }

  /** One pair, or null. */
  async showPair(id: string): Promise<AdminPairView | null> {
    return (await findPairRow(this.#db, id)) ?? null;
  }

  /** The partner's own settings per pair (availability, fee rate), for the pairs it has any for. */
  async partnerPairs(partnerId: string): Promise<AdminPartnerPairView[]> {
    return listPartnerPairs(this.#db, partnerId);
  }

  /** The partner's default fee rate and VAT percentage as stored, or null when no such partner. */
  async partnerFees(partnerId: string): Promise<AdminPartnerFeesView | null> {
    return (await findPartnerFees(this.#db, partnerId)) ?? null;
  }

  /** The partner's default fee rate (all pairs without their own) and VAT percentage. */
  async setPartnerFees(
    partnerId: string,
    s: { feeRate?: bigint | null; vatPercentage?: bigint | null },
    note: AuditNote,
  ): Promise<AdminResult<AdminPartnerFeesView>> {
    return inTransaction(this.#db, async (tx): Promise<AdminResult<AdminPartnerFeesView>> => {
      const before = await findPartnerFees(tx, partnerId);
      const row = await updatePartnerFees(tx, partnerId, s);
      if (row === undefined) return { ok: false, error: "partner_not_found" };
      await recordAudit(tx, this.#clock, note, {
        action: "partner.fees",
        targetType: "partner",
        targetId: partnerId,
        before: before ?? null,
        after: row,
      });
      return { ok: true, value: row };
    });
  }
}
