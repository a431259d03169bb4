// Quotes and their execution (docs/decisions.md, "Trading" and "Money"). A quote prices the trade
// and checks funds; its token executes it once, at the quoted price, in one transaction that
// re-checks funds atomically: when they are gone the order is `rejected` and nothing moves.

import crypto from "node:crypto";
import { type ErrorName, type FieldError, formatDecimal } from "@counterpart/protocol";
import type { Selectable } from "kysely";
import type { Db } from "../../db/database.ts";
import { databaseError, isDuplicateOrderRef } from "../../db/errors.ts";
import type { OrdersTable } from "../../db/schema.ts";
import { withRetries } from "../../db/transaction.ts";
import type { Clock } from "../../platform/clock.ts";
import { type KeptFactsCounter, keptFactsCounter } from "../../platform/kept-facts-metric.ts";
import type { Random } from "../../platform/random.ts";
import { judgeClient } from "../clients/index.ts";
import { type CallSizes, OrderQueue, type OrdersPerCall, ordersPerCallHistogram } from "../ledger/index.ts";
import { type OrderView, orderView, refTaken } from "../orders/index.ts";
import { changeSigned, type SignedWrite, WriteRefused } from "../partners/index.ts";
import { type HeldQuoteFacts, type KeptPair, KeptQuoteFacts } from "./kept-quote-facts.ts";
import { KeptQuotes } from "./kept-quotes.ts";
import { finerThanAsset, type Priced, priceQuote, requiredFunds, type Side } from "./quote.ts";
import { tradeLegs } from "./trade-legs.ts";
import {
  type ExecutionCall,
  executeQuote,
  executeQuotes,
  findExecutionFacts,
  findQuoteFacts,
  type HeldQuoteAnswer,
  type HeldQuoteCall,
  insertQuote,
  insertQuoteIfHeld,
  insertQuotesIfHeld,
  type NewQuote,
  type QuoteFacts,
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

/** The sizes of a trading service's calls, by use, from the service's histogram. */
export function tradingCallSizes(calls: OrdersPerCall): { execute: CallSizes; quote: CallSizes } {
  return { execute: calls.labels({ use: "execute" }), quote: calls.labels({ use: "quote" }) };
}

export class TradingService {
  readonly #db: Db;
  readonly #clock: Clock;
  readonly #random: Random;
  readonly #staleAfterSeconds: number;
  readonly #kept: KeptQuotes;
  readonly #judged: KeptFactsCounter;
  readonly #facts: KeptQuoteFacts;
  readonly #executes: OrderQueue<ExecutionCall, Selectable<OrdersTable>>;
  readonly #quotes: OrderQueue<HeldQuoteCall, HeldQuoteAnswer>;

  constructor(
    db: Db,
    clock: Clock,
    random: Random,
    options: { priceStaleAfterSeconds: number },
    kept: KeptQuotes = new KeptQuotes(),
    judged: KeptFactsCounter = keptFactsCounter(),
    facts: KeptQuoteFacts = new KeptQuoteFacts(),
    calls: { execute: CallSizes; quote: CallSizes } = tradingCallSizes(ordersPerCallHistogram()),
  ) {
    this.#db = db;
    this.#clock = clock;
    this.#random = random;
    this.#staleAfterSeconds = options.priceStaleAfterSeconds;
    this.#kept = kept;
    this.#judged = judged;
    this.#facts = facts;
    // Executes that arrive together are committed together (docs/decisions.md, "Orders committed
    // together").
    this.#executes = new OrderQueue(
      {
        one: (call) => executeQuote(db, call.execution, call.signed, call.held),
        many: (calls) => executeQuotes(db, calls),
      },
      (call) => call.execution,
      calls.execute,
    );
    // Quotes that arrive together are stored together (docs/decisions.md, "Quotes committed
    // together"); a quote locks nothing, so a call takes any.
    this.#quotes = new OrderQueue(
      {
        one: (call) => insertQuoteIfHeld(db, call.row, call.held, call.clock, call.signed),
        many: (calls) => insertQuotesIfHeld(db, calls),
      },
      undefined,
      calls.quote,
    );
  }

  /**
   * Errors, in the order of docs/decisions.md ("Order of checks on quotes"): invalid_client,
   * client_not_verified, client_deactivated (2008-2010), invalid_asset_pair (2013), validation_error
   * (a base amount finer than the base asset's decimal places: it needs the pair, so it comes right
   * after it), trading_not_available (4000), trading_temporarily_unavailable (4001),
   * amount_below_minimum (4004), amount_above_maximum (4003), insufficient_funds (3005). A client
   * and a pair whose facts this process kept are judged by them, and the quote's statement reads
   * the rows again and stores the quote only where they still hold them, the price is fresh and the
   * funds cover the quote; where not, nothing was written, and the request is judged by the facts
   * that statement read. A quote the facts kept would refuse is judged by the rows.
   */
  async quote(partnerId: string, req: QuoteRequest, signed?: SignedWrite): Promise<QuoteResult> {
    const held = this.#facts.get(partnerId, req.partnerClientId, req.pairId);
    const pricing = held === undefined ? undefined : judgePricing(req, { ...held.pair, stale: false });
    let facts: QuoteFacts | undefined;
    if (held !== undefined && pricing?.ok === true) {
      const result = await this.#store(partnerId, req, signed, held.client, held.pair, pricing, held);
      if (!(result instanceof FactsChanged)) {
        this.#judged.inc({ use: "quote", outcome: "kept" });
        return result;
      }
      facts = result.facts;
      this.#judged.inc({ use: "quote", outcome: "changed" });
    } else {
      this.#judged.inc({ use: "quote", outcome: "read" });
    }

    // The facts as the statement that found them changed read them, or read now.
    facts ??= await findQuoteFacts(
      this.#db,
      partnerId,
      req.partnerClientId,
      req.pairId,
      this.#clock,
      this.#staleAfterSeconds,
    );
    const client = judgeClient(facts.client ?? undefined);
    const pair = facts.pair;
    if (!client.ok || pair === undefined) {
      this.#facts.forget(partnerId, req.partnerClientId, req.pairId);
      return { ok: false, error: client.ok ? "invalid_asset_pair" : client.error, detail: null };
    }
    // client.ok passed, so facts.client is not null.
    if (facts.client === null) throw new Error("a client passed that was not read");
    // The facts are kept when they would let a quote through, whatever its amount and the funds.
    if (pair.tradable && !pair.stale) this.#facts.keep(partnerId, req.partnerClientId, facts.client, pair);
    else this.#facts.forget(partnerId, req.partnerClientId, req.pairId);
    const priced = judgePricing(req, pair);
    if (!priced.ok) return priced.refusal;
    const available = priced.need.asset === "base" ? facts.baseAvailable : facts.quoteAvailable;
    if (available < priced.need.amount)
      return { ok: false, error: "insufficient_funds", detail: { quote: priced.detailQuote } };
    const result = await this.#store(partnerId, req, signed, facts.client, pair, priced, undefined);
    // Without facts held, the statement checks none: it cannot answer that they changed.
    if (result instanceof FactsChanged)
      throw new Error("a quote stored without facts held found them changed");
    return result;
  }

  /**
   * Stores a quote judged and priced (judgePricing) for a client that passed, and keeps it for its
   * execute; with `held`, the statement reads the facts again and stores the quote only when they
   * are as held, and answers FactsChanged, having written nothing, when they are not.
   */
  async #store(
    partnerId: string,
    req: QuoteRequest,
    signed: SignedWrite | undefined,
    client: TradingClient,
    pair: KeptPair,
    pricing: Pricing,
    held: HeldQuoteFacts | undefined,
  ): Promise<QuoteResult | FactsChanged> {
    const { priced, vatStored, need } = pricing;
    const token = `qt_${this.#random.bytes(32).toString("base64url")}`;
    const row: NewQuote = {
      tokenHash: hashToken(token),
      partnerId,
      clientId: client.id,
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
      await changeSigned(signed, async (record) => {
        if (held === undefined) return insertQuote(this.#db, row, this.#clock, record);
        const kept = {
          ...held,
          partnerClientId: req.partnerClientId,
          staleAfterSeconds: this.#staleAfterSeconds,
          need,
        };
        const answer = await this.#quotes.make({ row, held: kept, clock: this.#clock, signed: record });
        // Thrown, so that changeSigned() takes the signature as not recorded (it was not).
        if (!answer.stored) throw new FactsChanged(answer.facts);
      });
    } catch (err) {
      if (err instanceof FactsChanged) return err;
      if (err instanceof WriteRefused) return { ok: false, error: err.errorName, detail: null };
      throw err;
    }
    this.#kept.keep(row.tokenHash, {
      partnerId,
      client,
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
          this.#executes.make({ execution, signed: record, held: held ? client : undefined }),
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

/**
 * The facts a quote was judged on by its process were no longer true when its statement ran:
 * nothing was written, and these are the facts that statement read.
 */
class FactsChanged extends Error {
  readonly facts: QuoteFacts;
  constructor(facts: QuoteFacts) {
    super("the quote's facts changed since they were kept");
    this.facts = facts;
  }
}

/** A quote priced and let through by its pair's facts; its funds are still to be checked. */
interface Pricing {
  ok: true;
  priced: Priced;
  /** The VAT percentage as stored and shown (scale 4), null without VAT. */
  vatStored: string | null;
  /** The quote as a refusal's detail shows it (no token). */
  detailQuote: QuoteView;
  need: { asset: "base" | "quote"; amount: bigint };
}

/**
 * Prices the request by the pair and judges it on the pair's facts, in the documented order (after
 * the client and the pair's existence, before the funds): validation_error (a base amount finer
 * than the base asset's decimal places), trading_not_available, trading_temporarily_unavailable,
 * amount_below_minimum, amount_above_maximum.
 */
function judgePricing(
  req: QuoteRequest,
  pair: KeptPair & { stale: boolean },
): Pricing | { ok: false; refusal: QuoteResult } {
  const refuse = (error: ErrorName, detail: Extract<QuoteResult, { ok: false }>["detail"]) => ({
    ok: false as const,
    refusal: { ok: false as const, error, detail },
  });
  // A base amount the base asset cannot hold can never be traded, whatever the pair's state: it
  // is told before 4000/4001 (which may pass) and before any quote is priced from it.
  if (finerThanAsset(req.baseAmount, pair.base_decimals))
    return refuse("validation_error", [decimalPlacesError(["body", "base_amount"], pair.base_decimals)]);
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
  if (!pair.tradable) return refuse("trading_not_available", { quote: detailQuote });
  if (pair.stale) return refuse("trading_temporarily_unavailable", { quote: detailQuote });
  // A trade too small to be worth a unit of the quote asset, or a sell whose fee and VAT would
  // eat the proceeds, is below the minimum too; 4004 is told before 4003.
  if (
    priced.baseAmount < pair.min_volume ||
    priced.quoteAmount === 0n ||
    (req.side === "sell" && priced.quoteAmount <= priced.fee + priced.vat)
  )
    return refuse("amount_below_minimum", { limit: formatDecimal(pair.min_volume), quote: detailQuote });
  if (priced.baseAmount > pair.max_volume)
    return refuse("amount_above_maximum", { limit: formatDecimal(pair.max_volume), quote: detailQuote });
  return { ok: true, priced, vatStored, detailQuote, need: requiredFunds(priced) };
}

/** execute_quote() found the client held no longer as kept: nothing was written. */
const standingChanged = Symbol("client standing changed");

/** A percentage at scale 8 (0 to 100, at most 4 decimals) as stored and shown: at scale 4. */
function percentageText(value: bigint): string {
  const units = 100_000_000n;
  return `${value / units}.${(value % units).toString().padStart(8, "0").slice(0, 4)}`;
}
