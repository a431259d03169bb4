// Quotes and their execution (docs/decisions.md, "Trading" and "Money"). A quote prices the trade
// and checks funds; its token executes it once, at the quoted price, in one transaction that
// re-checks funds atomically: when they are gone the order is `rejected` and nothing moves.

import crypto from "node:crypto";
import { type ErrorName, type FieldError, formatDecimal } from "@counterpart/protocol";
import type { Db } from "../../db/database.ts";
import { databaseError, isDuplicateOrderRef } from "../../db/errors.ts";
import { withRetries } from "../../db/transaction.ts";
import type { Clock } from "../../platform/clock.ts";
import { type KeptFactsCounter, keptFactsCounter } from "../../platform/kept-facts-metric.ts";
import type { Random } from "../../platform/random.ts";
import { judgeClient } from "../clients/index.ts";
import { type OrderView, orderView, refTaken } from "../orders/index.ts";
import { changeSigned, type SignedWrite, WriteRefused } from "../partners/index.ts";
import { KeptQuotes } from "./kept-quotes.ts";
import { finerThanAsset, priceQuote, requiredFunds, type Side } from "./quote.ts";
import { tradeLegs } from "./trade-legs.ts";
import {
  executeQuote,
  findExecutionFacts,
  findQuoteFacts,
  insertQuote,
  type QuoteTerms,
  type TradingClient,
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

/** The 422 of a base amount finer than the base asset's decimal places, in Pydantic's words. */
export function decimalPlacesError(loc: (string | number)[], decimalPlaces: number): FieldError {
  return {
    loc,
    msg: `Decimal input should have no more than ${decimalPlaces} decimal place${decimalPlaces === 1 ? "" : "s"}`,
    type: "decimal_max_places",
  };
}

/** SHA-256 of a quote's token, as stored (one-shot: no Hash object per quote and per execute). */
function hashToken(token: string): Buffer {
  return crypto.hash("sha256", token, "buffer");
}

export class TradingService {
  readonly #db: Db;
  readonly #clock: Clock;
  readonly #random: Random;
  readonly #staleAfterSeconds: number;
  readonly #kept: KeptQuotes;
  readonly #judged: KeptFactsCounter;

  constructor(
    db: Db,
    clock: Clock,
    random: Random,
    options: { priceStaleAfterSeconds: number },
    kept: KeptQuotes = new KeptQuotes(),
    judged: KeptFactsCounter = keptFactsCounter(),
  ) {
    this.#db = db;
    this.#clock = clock;
    this.#random = random;
    this.#staleAfterSeconds = options.priceStaleAfterSeconds;
    this.#kept = kept;
    this.#judged = judged;
  }

  /**
   * Errors, in the order of docs/decisions.md ("Order of checks on quotes"): invalid_client,
   * client_not_verified, client_deactivated (2008-2010), invalid_asset_pair (2013), validation_error
   * (a base amount finer than the base asset's decimal places: it needs the pair, so it comes right
   * after it), trading_not_available (4000), trading_temporarily_unavailable (4001),
   * amount_below_minimum (4004), amount_above_maximum (4003), insufficient_funds (3005).
   */
  async quote(partnerId: string, req: QuoteRequest, signed?: SignedWrite): Promise<QuoteResult> {
    const facts = await findQuoteFacts(
      this.#db,
      partnerId,
      req.partnerClientId,
      req.pairId,
      this.#clock,
      this.#staleAfterSeconds,
    );
    const client = judgeClient(facts.client ?? undefined);
    if (!client.ok) return { ok: false, error: client.error, detail: null };
    const pair = facts.pair;
    if (pair === undefined) return { ok: false, error: "invalid_asset_pair", detail: null };
    // A base amount the base asset cannot hold can never be traded, whatever the pair's state: it
    // is told before 4000/4001 (which may pass) and before any quote is priced from it.
    if (finerThanAsset(req.baseAmount, pair.base_decimals)) {
      return {
        ok: false,
        error: "validation_error",
        detail: [decimalPlacesError(["body", "base_amount"], pair.base_decimals)],
      };
    }

    const priced = priceQuote({
      side: req.side,
      baseAmount: req.baseAmount,
      buyPrice: pair.buy,
      sellPrice: pair.sell,
      quoteDecimals: pair.quote_decimals,
      feeRate: pair.fee_rate,
      vatPercentage: pair.vat_percentage,
    });
    const vatStored = pair.vat_percentage === null ? null : percentageText(pair.vat_percentage);
    const detailQuote = quoteView(priced, vatStored, pair.lifetime_s, null);
    if (!pair.tradable) return { ok: false, error: "trading_not_available", detail: { quote: detailQuote } };
    if (pair.stale)
      return { ok: false, error: "trading_temporarily_unavailable", detail: { quote: detailQuote } };
    const min = pair.min_volume;
    const max = pair.max_volume;
    // A trade too small to be worth a unit of the quote asset, or a sell whose fee and VAT would
    // eat the proceeds, is below the minimum too; 4004 is told before 4003.
    if (
      priced.baseAmount < min ||
      priced.quoteAmount === 0n ||
      (req.side === "sell" && priced.quoteAmount <= priced.fee + priced.vat)
    ) {
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
    const need = requiredFunds(priced);
    const available = need.asset === "base" ? facts.baseAvailable : facts.quoteAvailable;
    if (available < need.amount)
      return { ok: false, error: "insufficient_funds", detail: { quote: detailQuote } };

    const token = `qt_${this.#random.bytes(32).toString("base64url")}`;
    const row = {
      tokenHash: hashToken(token),
      partnerId,
      clientId: client.client.id,
      pairId: pair.id,
      side: req.side,
      price: priced.price,
      baseAmount: priced.baseAmount,
      quoteAmount: priced.quoteAmount,
      fee: priced.fee,
      vat: priced.vat,
      vatPercentage: vatStored,
      lifetimeSeconds: pair.lifetime_s,
    };
    try {
      await changeSigned(signed, (record) => insertQuote(this.#db, row, this.#clock, record));
    } catch (err) {
      if (err instanceof WriteRefused) return { ok: false, error: err.errorName, detail: null };
      throw err;
    }
    // The facts client.ok was decided on (facts.client is not null when it passed).
    const judged = facts.client;
    if (judged !== null) {
      this.#kept.keep(row.tokenHash, {
        partnerId,
        client: judged,
        terms: {
          pair_id: pair.id,
          base_id: pair.base_id,
          quote_id: pair.quote_id,
          side: req.side,
          price: priced.price,
          base_amount: priced.baseAmount,
          quote_amount: priced.quoteAmount,
          fee: priced.fee,
          vat: priced.vat,
        },
      });
    }
    return { ok: true, quote: quoteView(priced, vatStored, pair.lifetime_s, token) };
  }

  /**
   * Errors, in this order: duplicate_order_ref (2020), invalid_client, client_not_verified,
   * client_deactivated (2008-2010), invalid_trading_token (4008). Funds gone since the quote give an
   * order in status `rejected`, not an error. A token whose quote this process made and kept, for
   * the same partner's client, is executed by the kept terms and client's facts, and the order's
   * statement checks that the client's row still holds them; when it does not, nothing was
   * written, and the request is judged again by the rows.
   */
  async execute(partnerId: string, req: ExecuteRequest, signed?: SignedWrite): Promise<ExecuteResult> {
    const tokenHash = hashToken(req.token);
    const kept = this.#kept.get(tokenHash);
    if (
      kept !== undefined &&
      kept.partnerId === partnerId &&
      kept.client.partner_client_id === req.partnerClientId &&
      judgeClient(kept.client).ok
    ) {
      const result = await this.#spend(partnerId, req, tokenHash, signed, kept.client, kept.terms, true);
      if (result !== standingChanged) {
        this.#judged.inc({ use: "execute", outcome: "kept" });
        return result;
      }
      this.#judged.inc({ use: "execute", outcome: "changed" });
    } else {
      this.#judged.inc({ use: "execute", outcome: "read" });
    }

    const facts = await findExecutionFacts(this.#db, partnerId, req.partnerClientId, tokenHash, this.#clock);
    const client = judgeClient(facts.client ?? undefined);
    const quote = client.ok ? facts.quote : undefined;
    // The reference comes first. When the client and the token pass, the unique index decides: the
    // order row goes in before the token is spent or any balance moves. Only a request that fails
    // another check looks its reference up (as funding does).
    if (facts.client === null || !client.ok || quote === undefined) {
      if (req.partnerOrderRef !== null && (await refTaken(this.#db, partnerId, req.partnerOrderRef))) {
        return { ok: false, error: "duplicate_order_ref" };
      }
      return client.ok ? { ok: false, error: "invalid_trading_token" } : client;
    }
    const result = await this.#spend(partnerId, req, tokenHash, signed, facts.client, quote, false);
    // Without the client held, the statement checks none: it cannot answer that it changed.
    if (result === standingChanged)
      throw new Error("execute_quote answered the client changed for a client it was not given");
    return result;
  }

  /**
   * The order, the spent quote and the posting in one statement (execute_quote, migration 0009,
   * its terms checked since 0023), for a request whose client passed; with `held`, the statement
   * first checks that the client's row is still as kept. The order row goes in first: a concurrent
   * request with the same reference waits on the unique index and then gets 2020, never 4008 or a
   * rejection caused by the winner.
   */
  async #spend(
    partnerId: string,
    req: ExecuteRequest,
    tokenHash: Buffer,
    signed: SignedWrite | undefined,
    client: TradingClient,
    terms: QuoteTerms,
    held: boolean,
  ): Promise<ExecuteResult | typeof standingChanged> {
    const { slot, legs } = tradeLegs({
      clientId: client.id,
      side: terms.side,
      baseId: terms.base_id,
      quoteId: terms.quote_id,
      baseAmount: terms.base_amount,
      quoteAmount: terms.quote_amount,
      fee: terms.fee,
      vat: terms.vat,
    });
    const execution = {
      partnerId,
      clientId: client.id,
      ref: req.partnerOrderRef,
      tokenHash,
      clock: this.#clock,
      quote: terms,
      legs,
      slot,
    };
    try {
      const order = await withRetries(() =>
        changeSigned(signed, (record) =>
          executeQuote(this.#db, execution, record, held ? client : undefined),
        ),
      );
      this.#kept.forget(tokenHash);
      return { ok: true, order: orderView({ ...order, partner_client_id: client.partner_client_id }) };
    } catch (err) {
      const kind = databaseError(err)?.kind;
      if (kind === "client_standing_changed") {
        this.#kept.forget(tokenHash);
        return standingChanged;
      }
      if (kind === "unspendable_token") {
        this.#kept.forget(tokenHash);
        return { ok: false, error: "invalid_trading_token" };
      }
      if (isDuplicateOrderRef(err)) return { ok: false, error: "duplicate_order_ref" };
      if (err instanceof WriteRefused) return { ok: false, error: err.errorName };
      throw err;
    }
  }
}

/** execute_quote() found the client held no longer as kept: nothing was written. */
const standingChanged = Symbol("client standing changed");

/** A percentage at scale 8 (0 to 100, at most 4 decimals) as stored and shown: at scale 4. */
function percentageText(value: bigint): string {
  const units = 100_000_000n;
  return `${value / units}.${(value % units).toString().padStart(8, "0").slice(0, 4)}`;
}
