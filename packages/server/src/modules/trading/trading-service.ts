// Quotes and their execution (spec §4.3, DESIGN "Trading" and "Money"). A quote prices the trade
// and checks funds; its token executes it once, at the quoted price, in one transaction that
// re-checks funds atomically: when they are gone the order is `rejected` and nothing moves.

import crypto from "node:crypto";
import { type ErrorName, type FieldError, formatDecimal } from "@counterpart/protocol";
import type { Db } from "../../db/database.ts";
import { dbNow } from "../../db/now.ts";
import { moneyFromPg, moneyToPg } from "../../db/numeric.ts";
import { pgErrorCode, withRetries } from "../../db/transaction.ts";
import type { Clock } from "../../platform/clock.ts";
import type { Random } from "../../platform/random.ts";
import { findAsset } from "../catalog/catalog-store.ts";
import { checkClientCanTransact } from "../clients/client-check.ts";
import { decimalPlacesError, finerThanAsset, isDuplicateRef } from "../funding/index.ts";
import { clientBalances, type Leg } from "../ledger/index.ts";
import { type OrderView, orderView, refTaken } from "../orders/index.ts";
import { priceQuote, requiredFunds, type Side } from "./quote.ts";
import {
  executeQuote,
  findTradingPair,
  findUsableQuote,
  insertQuote,
  unspendableTokenCode,
} from "./trading-store.ts";
import { type QuoteView, quoteView } from "./trading-views.ts";

export const tokenPattern = /^qt_[A-Za-z0-9_-]{43}$/;

export interface QuoteRequest {
  partnerClientId: string;
  pairId: string;
  side: Side;
  baseAmount: bigint;
}

export type QuoteResult =
  | { ok: true; quote: QuoteView }
  | { ok: false; error: ErrorName; detail: null | FieldError[] | { quote: QuoteView; limit?: string } };

export interface ExecuteRequest {
  partnerClientId: string;
  token: string;
  partnerOrderRef: string | null;
}

export type ExecuteResult = { ok: true; order: OrderView } | { ok: false; error: ErrorName };

function hashToken(token: string): Buffer {
  return crypto.createHash("sha256").update(token).digest();
}

export class TradingService {
  readonly #db: Db;
  readonly #clock: Clock;
  readonly #random: Random;
  readonly #staleAfterSeconds: number;

  constructor(db: Db, clock: Clock, random: Random, options: { priceStaleAfterSeconds: number }) {
    this.#db = db;
    this.#clock = clock;
    this.#random = random;
    this.#staleAfterSeconds = options.priceStaleAfterSeconds;
  }

  /**
   * Errors, in this order: validation_error (a base amount finer than the base asset's decimal
   * places), invalid_client, client_not_verified, client_deactivated (2008-2010),
   * invalid_asset_pair (2013), trading_not_available (4000), trading_temporarily_unavailable
   * (4001), amount_below_minimum (4004), amount_above_maximum (4003), insufficient_funds (3005).
   */
  async quote(partnerId: string, req: QuoteRequest): Promise<QuoteResult> {
    // A base amount the base asset cannot hold is bad input (422), reported before the client and
    // the pair; the base asset is read from the pair id, and an unknown one is left for 2013.
    const baseAsset = /^([A-Z0-9]{2,10})-[A-Z0-9]{2,10}$/.exec(req.pairId)?.[1];
    const base = baseAsset === undefined ? undefined : await findAsset(this.#db, baseAsset);
    if (base !== undefined && finerThanAsset(req.baseAmount, base.decimal_places)) {
      return {
        ok: false,
        error: "validation_error",
        detail: [decimalPlacesError(["body", "base_amount"], base.decimal_places)],
      };
    }
    const client = await checkClientCanTransact(this.#db, partnerId, req.partnerClientId);
    if (!client.ok) return { ok: false, error: client.error, detail: null };
    const now = dbNow(this.#clock);
    const pair = await findTradingPair(this.#db, partnerId, req.pairId, now, this.#staleAfterSeconds);
    if (pair === undefined) return { ok: false, error: "invalid_asset_pair", detail: null };

    const priced = priceQuote({
      side: req.side,
      baseAmount: req.baseAmount,
      buyPrice: moneyFromPg(pair.buy),
      sellPrice: moneyFromPg(pair.sell),
      quoteDecimals: pair.quote_decimals,
      feeRate: moneyFromPg(pair.fee_rate),
      vatPercentage: pair.vat_percentage === null ? null : moneyFromPg(pair.vat_percentage),
    });
    const vatStored = pair.vat_percentage === null ? null : trimPercentage(pair.vat_percentage);
    const detailQuote = quoteView(priced, vatStored, pair.lifetime_s, null);
    if (!pair.tradable) return { ok: false, error: "trading_not_available", detail: { quote: detailQuote } };
    if (pair.stale)
      return { ok: false, error: "trading_temporarily_unavailable", detail: { quote: detailQuote } };
    const min = moneyFromPg(pair.min_volume);
    const max = moneyFromPg(pair.max_volume);
    // A trade too small to be worth a unit of the quote asset is below the minimum too.
    if (priced.baseAmount < min || priced.quoteAmount === 0n) {
      return {
        ok: false,
        error: "amount_below_minimum",
        detail: { limit: formatDecimal(min), quote: detailQuote },
      };
    }
    if (priced.baseAmount > max) {
      return {
        ok: false,
        error: "amount_above_maximum",
        detail: { limit: formatDecimal(max), quote: detailQuote },
      };
    }
    if (req.side === "sell" && priced.quoteAmount <= priced.fee + priced.vat) {
      return {
        ok: false,
        error: "amount_below_minimum",
        detail: { limit: formatDecimal(min), quote: detailQuote },
      };
    }
    const need = requiredFunds(priced);
    const balances = await clientBalances(this.#db, client.client.id);
    const available = balances.get(need.asset === "base" ? pair.base_id : pair.quote_id)?.available ?? 0n;
    if (available < need.amount)
      return { ok: false, error: "insufficient_funds", detail: { quote: detailQuote } };

    const token = `qt_${this.#random.bytes(32).toString("base64url")}`;
    await insertQuote(
      this.#db,
      {
        tokenHash: hashToken(token),
        partnerId,
        clientId: client.client.id,
        pairId: pair.id,
        side: req.side,
        price: moneyToPg(priced.price),
        baseAmount: moneyToPg(priced.baseAmount),
        quoteAmount: moneyToPg(priced.quoteAmount),
        fee: moneyToPg(priced.fee),
        vat: moneyToPg(priced.vat),
        vatPercentage: vatStored,
        lifetimeSeconds: pair.lifetime_s,
      },
      now,
    );
    return { ok: true, quote: quoteView(priced, vatStored, pair.lifetime_s, token) };
  }

  /**
   * Errors, in this order: duplicate_order_ref (2020), invalid_client, client_not_verified,
   * client_deactivated (2008-2010), invalid_trading_token (4008). Funds gone since the quote give an
   * order in status `rejected`, not an error.
   */
  async execute(partnerId: string, req: ExecuteRequest): Promise<ExecuteResult> {
    const client = await checkClientCanTransact(this.#db, partnerId, req.partnerClientId);
    const tokenHash = hashToken(req.token);
    const now = dbNow(this.#clock);
    const quote = client.ok
      ? await findUsableQuote(this.#db, tokenHash, partnerId, client.client.id, now)
      : undefined;
    // The reference comes first. When the client and the token pass, the unique index decides: the
    // order row goes in before the token is spent or any balance moves. Only a request that fails
    // another check looks its reference up (as funding does).
    if (!client.ok || quote === undefined) {
      if (req.partnerOrderRef !== null && (await refTaken(this.#db, partnerId, req.partnerOrderRef))) {
        return { ok: false, error: "duplicate_order_ref" };
      }
      return client.ok ? { ok: false, error: "invalid_trading_token" } : client;
    }

    const buying = quote.side === "buy";
    const base = moneyFromPg(quote.base_amount);
    const quoteAmount = moneyFromPg(quote.quote_amount);
    const fee = moneyFromPg(quote.fee);
    const vat = moneyFromPg(quote.vat);
    const legs: Leg[] = buying
      ? [
          { kind: "client", clientId: client.client.id, assetId: quote.base_id, amount: base },
          {
            kind: "client",
            clientId: client.client.id,
            assetId: quote.quote_id,
            amount: -(quoteAmount + fee + vat),
          },
          { kind: "omnibus", clientId: null, assetId: quote.base_id, amount: -base },
          { kind: "omnibus", clientId: null, assetId: quote.quote_id, amount: quoteAmount },
        ]
      : [
          { kind: "client", clientId: client.client.id, assetId: quote.base_id, amount: -base },
          {
            kind: "client",
            clientId: client.client.id,
            assetId: quote.quote_id,
            amount: quoteAmount - fee - vat,
          },
          { kind: "omnibus", clientId: null, assetId: quote.base_id, amount: base },
          { kind: "omnibus", clientId: null, assetId: quote.quote_id, amount: -quoteAmount },
        ];
    if (fee > 0n) legs.push({ kind: "fee_revenue", clientId: null, assetId: quote.quote_id, amount: fee });
    if (vat > 0n) legs.push({ kind: "vat_payable", clientId: null, assetId: quote.quote_id, amount: vat });

    // The order, the spent quote and the posting in one statement (execute_quote, migration 0009).
    // The order row goes in first: a concurrent request with the same reference waits on the
    // unique index and then gets 2020, never 4008 or a rejection caused by the winner.
    try {
      const order = await withRetries(() =>
        executeQuote(this.#db, {
          partnerId,
          clientId: client.client.id,
          ref: req.partnerOrderRef,
          tokenHash,
          now,
          quote,
          legs,
        }),
      );
      return { ok: true, order: orderView({ ...order, partner_client_id: client.client.partnerClientId }) };
    } catch (err) {
      if (pgErrorCode(err) === unspendableTokenCode) return { ok: false, error: "invalid_trading_token" };
      if (isDuplicateRef(err)) return { ok: false, error: "duplicate_order_ref" };
      throw err;
    }
  }
}

/** NUMERIC(38,8) text of a percentage back to its stored scale of 4. */
function trimPercentage(text: string): string {
  const [whole = "0", frac = ""] = text.split(".");
  return `${whole}.${frac.slice(0, 4).padEnd(4, "0")}`;
}
