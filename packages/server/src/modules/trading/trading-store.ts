// Queries for trading: a pair as one partner sees it (availability, fee rate, VAT, staleness by
// the database's clock), and quotes, found and spent by the hash of their token.

import { type RawBuilder, type Selectable, sql } from "kysely";
import { type Db, preparedMarker } from "../../db/database.ts";
import { type BatchItem, batchOutcomes, type RefusedInBatch } from "../../db/errors.ts";
import { dbNow } from "../../db/now.ts";
import { moneyFromPg, moneyToPg } from "../../db/numeric.ts";
import type { OrdersTable } from "../../db/schema.ts";
import { isoFromMs } from "../../db/time.ts";
import type { Tx } from "../../db/transaction.ts";
import { type Clock, systemClock } from "../../platform/clock.ts";
import { type Leg, legArguments, orderLegs } from "../ledger/index.ts";
import { orderColumnList } from "../orders/index.ts";
import { partnerArgument, type SignatureToRecord, signatureArrays } from "../partners/index.ts";

type Q = Db | Tx;

/** A pair as one partner sees it; prices, volumes and rates at scale 8. */
export interface TradingPair {
  id: string;
  base_id: string;
  quote_id: string;
  base_decimals: number;
  quote_decimals: number;
  buy: bigint;
  sell: bigint;
  tradable: boolean;
  min_volume: bigint;
  max_volume: bigint;
  lifetime_s: number;
  fee_rate: bigint;
  vat_percentage: bigint | null;
  stale: boolean;
}

interface TradingPairText {
  id: string;
  base_id: string;
  quote_id: string;
  base_decimals: number;
  quote_decimals: number;
  buy: string;
  sell: string;
  tradable: boolean;
  min_volume: string;
  max_volume: string;
  lifetime_s: number;
  fee_rate: string;
  vat_percentage: string | null;
  stale: boolean;
}

/**
 * The pair if it exists and is not withheld from the partner, as a subquery; stale when its price
 * is older than `staleAfterSeconds` by the database's clock (db/now.ts).
 */
function pairQuery(partnerId: string, pairId: string, now: RawBuilder<string>, staleAfterSeconds: number) {
  return sql`
    SELECT p.id, p.base_id, p.quote_id, b.decimal_places AS base_decimals, q.decimal_places AS quote_decimals,
           p.buy::text AS buy, p.sell::text AS sell, p.tradable, p.min_volume::text AS min_volume,
           p.max_volume::text AS max_volume, p.lifetime_s,
           coalesce(pp.fee_rate, pa.fee_rate, p.fee_rate)::numeric(38, 8)::text AS fee_rate,
           pa.vat_percentage::numeric(38, 8)::text AS vat_percentage,
           p.price_at < ${now} - make_interval(secs => ${staleAfterSeconds}) AS stale
    FROM asset_pairs p
    JOIN assets b ON b.id = p.base_id
    JOIN assets q ON q.id = p.quote_id
    JOIN partners pa ON pa.id = ${partnerId}
    LEFT JOIN partner_pairs pp ON pp.pair_id = p.id AND pp.partner_id = pa.id
    WHERE p.id = ${pairId} AND coalesce(pp.available, true)`;
}

function tradingPair(r: TradingPairText): TradingPair {
  return {
    ...r,
    buy: moneyFromPg(r.buy),
    sell: moneyFromPg(r.sell),
    min_volume: moneyFromPg(r.min_volume),
    max_volume: moneyFromPg(r.max_volume),
    fee_rate: moneyFromPg(r.fee_rate),
    vat_percentage: r.vat_percentage === null ? null : moneyFromPg(r.vat_percentage),
  };
}

/** A partner's client as a quote or an execute is judged on it (judgeClient decides). */
export interface TradingClient {
  id: number;
  partner_client_id: string;
  status: string;
  active: boolean;
}

/** What a quote is decided on, read in one statement. */
export interface QuoteFacts {
  /** The partner's client, null when there is none. */
  client: TradingClient | null;
  /** The pair as the partner sees it (pairQuery), undefined when absent or withheld. */
  pair: TradingPair | undefined;
  /** The client's available balances (balance − held) of the pair's base and quote assets; 0 without an account. */
  baseAvailable: bigint;
  quoteAvailable: bigint;
}

/**
 * The client, the pair as the partner sees it, and the client's available balances of the pair's
 * two assets, in one statement (one snapshot): a quote decides on these, then inserts itself.
 */
export async function findQuoteFacts(
  db: Q,
  partnerId: string,
  partnerClientId: string,
  pairId: string,
  clock: Clock,
  staleAfterSeconds: number,
): Promise<QuoteFacts> {
  const { rows } = await sql<QuoteFactsRow>`${sql.raw(preparedMarker)}
    ${quoteFactsWith(partnerId, partnerClientId, pairId, clock, staleAfterSeconds)}
    SELECT f.* FROM f
  `.execute(db);
  const r = rows[0];
  if (r === undefined) throw new Error("findQuoteFacts: no row");
  return quoteFacts(r);
}

type QuoteFactsRow = Partial<TradingPairText> & {
  client: QuoteFacts["client"];
  base_available: string | null;
  quote_available: string | null;
};

/**
 * `WITH c (the client), pr (the pair as the partner sees it), f (one row: the client as JSON, the
 * pair's columns, the client's available balances of the pair's two assets)`, for a statement to
 * go on from: one snapshot. Each balance is read by the whole key of accounts_owner_key (kind,
 * partner, client, asset): joined to `c` instead, PostgreSQL scanned every client account of the
 * asset, all partners' (docs/operations.md, "A trade's database side").
 */
function quoteFactsWith(
  partnerId: string,
  partnerClientId: string,
  pairId: string,
  clock: Clock,
  staleAfterSeconds: number,
) {
  return sql`
    WITH c AS (SELECT id, partner_client_id, status, active FROM clients
                WHERE partner_id = ${partnerId} AND partner_client_id = ${partnerClientId}),
         pr AS (${pairQuery(partnerId, pairId, dbNow(clock), staleAfterSeconds)}),
         f AS (
           SELECT (SELECT json_build_object('id', id, 'partner_client_id', partner_client_id, 'status', status,
                                            'active', active) FROM c) AS client,
                  pr.*,
                  (SELECT (a.balance - a.held)::text FROM accounts a
                    WHERE a.kind = 'client' AND a.partner_id = ${partnerId} AND a.client_id = (SELECT id FROM c)
                      AND a.asset_id = pr.base_id) AS base_available,
                  (SELECT (a.balance - a.held)::text FROM accounts a
                    WHERE a.kind = 'client' AND a.partner_id = ${partnerId} AND a.client_id = (SELECT id FROM c)
                      AND a.asset_id = pr.quote_id) AS quote_available
           FROM (VALUES (1)) AS one (x) LEFT JOIN pr ON true)`;
}

function quoteFacts(r: QuoteFactsRow): QuoteFacts {
  const { client, base_available, quote_available, ...pair } = r;
  return {
    client: client ?? null,
    pair: pair.id === null || pair.id === undefined ? undefined : tradingPair(pair as TradingPairText),
    baseAvailable: base_available === null ? 0n : moneyFromPg(base_available),
    quoteAvailable: quote_available === null ? 0n : moneyFromPg(quote_available),
  };
}

/** A quote's stored terms; amounts at scale 8. */
export interface QuoteRow {
  id: number;
  pair_id: string;
  base_id: string;
  quote_id: string;
  side: "buy" | "sell";
  price: bigint;
  base_amount: bigint;
  quote_amount: bigint;
  fee: bigint;
  vat: bigint;
}

/** What an execute trades: a quote's terms, without its row's id. */
export type QuoteTerms = Omit<QuoteRow, "id">;

type QuoteRowText = Omit<QuoteRow, "price" | "base_amount" | "quote_amount" | "fee" | "vat"> & {
  price: string;
  base_amount: string;
  quote_amount: string;
  fee: string;
  vat: string;
};

/** A quote's row, as the service prices it. */
export interface NewQuote {
  tokenHash: Buffer;
  partnerId: string;
  clientId: number;
  pairId: string;
  side: "buy" | "sell";
  price: bigint;
  baseAmount: bigint;
  quoteAmount: bigint;
  fee: bigint;
  vat: bigint;
  /** The percentage as stored, at scale 4 (NUMERIC(7,4) text) */
  vatPercentage: string | null;
  lifetimeSeconds: number;
}

/** Stores a quote; with `signed`, its statement also records the request's signature. */
export async function insertQuote(
  db: Q,
  row: NewQuote,
  clock: Clock,
  signed?: SignatureToRecord,
): Promise<void> {
  const now = dbNow(clock);
  await sql`${sql.raw(preparedMarker)}
    INSERT INTO quotes (token_hash, partner_id, client_id, pair_id, side, price, base_amount, quote_amount,
                        fee, vat, vat_percentage, created_at, expires_at)
    VALUES (${row.tokenHash}, ${partnerArgument(row.partnerId, signed)}, ${row.clientId}, ${row.pairId}, ${row.side},
            ${moneyToPg(row.price)}, ${moneyToPg(row.baseAmount)}, ${moneyToPg(row.quoteAmount)},
            ${moneyToPg(row.fee)}, ${moneyToPg(row.vat)}, ${row.vatPercentage}, ${now},
            ${now} + make_interval(secs => ${row.lifetimeSeconds}))
  `.execute(db);
}

/**
 * What a quote priced and judged by the facts its process kept was decided on: the client and the
 * pair as kept (the pair tradable and its price fresh), and the client's funds of `need.asset` at
 * least `need.amount`.
 */
export interface QuoteHeld {
  partnerClientId: string;
  client: TradingClient;
  pair: Omit<TradingPair, "stale">;
  staleAfterSeconds: number;
  need: { asset: "base" | "quote"; amount: bigint };
}

/**
 * Stores a quote priced and judged by the facts its process kept, in one statement that reads the
 * facts as findQuoteFacts() does and inserts the quote only when they are what `held` says (so in
 * the statement's own snapshot: nothing between the facts and the row). With `signed`, the row's
 * statement records the request's signature, only when the row goes in. Answers the facts read,
 * and whether the quote was stored: when it was not, nothing was written, and the caller judges
 * the request by the facts.
 */
export async function insertQuoteIfHeld(
  db: Q,
  row: NewQuote,
  held: QuoteHeld,
  clock: Clock,
  signed?: SignatureToRecord,
): Promise<{ stored: boolean; facts: QuoteFacts }> {
  if (held.client.id !== row.clientId || held.pair.id !== row.pairId)
    throw new Error("the facts held are not the quote's client and pair");
  const now = dbNow(clock);
  const c = held.client;
  const p = held.pair;
  const available = held.need.asset === "base" ? sql`f.base_available` : sql`f.quote_available`;
  const { rows } = await sql<QuoteFactsRow & { stored: boolean }>`${sql.raw(preparedMarker)}
    ${quoteFactsWith(row.partnerId, held.partnerClientId, row.pairId, clock, held.staleAfterSeconds)},
         q AS (
           INSERT INTO quotes (token_hash, partner_id, client_id, pair_id, side, price, base_amount,
                               quote_amount, fee, vat, vat_percentage, created_at, expires_at)
           SELECT ${row.tokenHash}::bytea, ${partnerArgument(row.partnerId, signed)}, c.id, f.id, ${row.side}::text,
                  ${moneyToPg(row.price)}::numeric, ${moneyToPg(row.baseAmount)}::numeric,
                  ${moneyToPg(row.quoteAmount)}::numeric, ${moneyToPg(row.fee)}::numeric,
                  ${moneyToPg(row.vat)}::numeric, ${row.vatPercentage}::numeric, ${now}::timestamptz,
                  ${now}::timestamptz + make_interval(secs => f.lifetime_s)
           FROM f JOIN c ON true
           WHERE (c.id, c.partner_client_id, c.status, c.active)
                   = (${c.id}::bigint, ${c.partner_client_id}, ${c.status}, ${c.active}::boolean)
             AND (f.id, f.base_id, f.quote_id, f.base_decimals, f.quote_decimals, f.buy::numeric,
                  f.sell::numeric, f.tradable, f.min_volume::numeric, f.max_volume::numeric, f.lifetime_s,
                  f.fee_rate::numeric, f.stale)
                 = (${p.id}, ${p.base_id}, ${p.quote_id}, ${p.base_decimals}::integer, ${p.quote_decimals}::integer,
                    ${moneyToPg(p.buy)}::numeric, ${moneyToPg(p.sell)}::numeric, true,
                    ${moneyToPg(p.min_volume)}::numeric, ${moneyToPg(p.max_volume)}::numeric,
                    ${p.lifetime_s}::integer, ${moneyToPg(p.fee_rate)}::numeric, false)
             AND f.vat_percentage::numeric IS NOT DISTINCT FROM
                   ${p.vat_percentage === null ? null : moneyToPg(p.vat_percentage)}::numeric
             AND coalesce(${available}::numeric, 0) >= ${moneyToPg(held.need.amount)}::numeric
           RETURNING 1)
    SELECT f.*, EXISTS (SELECT 1 FROM q) AS stored FROM f
  `.execute(db);
  const r = rows[0];
  if (r === undefined) throw new Error("insertQuoteIfHeld: no row");
  const { stored, ...facts } = r;
  return { stored, facts: quoteFacts(facts) };
}

export interface QuoteExecution {
  partnerId: string;
  clientId: number;
  ref: string | null;
  tokenHash: Buffer;
  clock: Clock;
  quote: QuoteTerms;
  /** The trade's legs and house slot (tradeLegs()). */
  legs: readonly Leg[];
  slot: number;
}

/**
 * Records the trade of a quote in one statement, with the database's execute_quote() (migration
 * 0009): the order first, then the quote spent and linked to it, then its legs posted. Funds gone
 * since the quote leave the order rejected, nothing posted and the quote spent. Throws the
 * database's error (db/errors.ts): an unspendable token, a unique violation on
 * orders_partner_order_ref_key for a reference already taken; with `signed`, the statement also
 * records the request's signature (partnerArgument), and may throw what that raises; with `held`,
 * it first checks that the client is still as kept (clientArgument), and throws
 * client_standing_changed when not. The function checks the terms given against the quote's row
 * (migration 0023). Nothing is written, the record included, when it throws.
 */
export async function executeQuote(
  db: Q,
  e: QuoteExecution,
  signed?: SignatureToRecord,
  held?: TradingClient,
): Promise<Selectable<OrdersTable>> {
  const q = e.quote;
  const buying = q.side === "buy";
  const base = moneyToPg(q.base_amount);
  const quote = moneyToPg(q.quote_amount);
  const { rows } = await sql<Selectable<OrdersTable>>`${sql.raw(preparedMarker)}
    SELECT ${orderColumnList("o")} FROM execute_quote(
      ${partnerArgument(e.partnerId, signed)}, ${clientArgument(e, held)}, ${e.ref}, ${e.tokenHash}, ${dbNow(e.clock)}, ${q.side}, ${moneyToPg(q.price)}::numeric,
      ${buying ? base : quote}::numeric, ${buying ? q.base_id : q.quote_id},
      ${buying ? quote : base}::numeric, ${buying ? q.quote_id : q.base_id},
      ${moneyToPg(q.fee)}::numeric, ${q.quote_id}, ${moneyToPg(q.vat)}::numeric, ${legArguments(e.legs, e.slot)}) AS o
  `.execute(db);
  const row = rows[0];
  if (row === undefined) throw new Error("execute_quote returned no order");
  return row;
}

/** One trade of executeQuotes(): as executeQuote() takes it. */
export interface ExecutionCall {
  execution: QuoteExecution;
  signed?: SignatureToRecord | undefined;
  held?: TradingClient | undefined;
}

/**
 * Several trades in one statement and one transaction, with the database's execute_quotes()
 * (migration 0025): each as executeQuote() would make it, in a block of its own, so that one
 * refused undoes only its own work. The calls must be in ascending order of house slot and
 * partner, one per slot and partner (migration 0024 says why). Answers each call's order, or its
 * error (RefusedInBatch), in the calls' order; throws, with nothing written, when the statement
 * fails as a whole (the connection lost, a timeout).
 */
export async function executeQuotes(
  db: Q,
  calls: readonly ExecutionCall[],
): Promise<(Selectable<OrdersTable> | RefusedInBatch)[]> {
  const col = <T>(pick: (call: ExecutionCall) => T): T[] => calls.map(pick);
  const legs: Leg[] = [];
  for (const { execution: e, held } of calls) {
    legs.push(...orderLegs(e.legs, e.slot));
    if (held !== undefined && held.id !== e.clientId)
      throw new Error("the client held is not the execution's client");
  }
  const terms = calls.map(({ execution: { quote: q } }) => {
    const buying = q.side === "buy";
    const base = moneyToPg(q.base_amount);
    const quote = moneyToPg(q.quote_amount);
    return {
      side: q.side,
      price: moneyToPg(q.price),
      debit: buying ? base : quote,
      debitAsset: buying ? q.base_id : q.quote_id,
      credit: buying ? quote : base,
      creditAsset: buying ? q.quote_id : q.base_id,
      fee: moneyToPg(q.fee),
      feeAsset: q.quote_id,
      vat: moneyToPg(q.vat),
    };
  });
  const { rows } = await sql<Selectable<OrdersTable> & BatchItem>`${sql.raw(preparedMarker)}
    SELECT b.item, b.error_code, b.error_constraint, ${orderColumnList("(b.o)")} FROM execute_quotes(
      ${col((c) => c.execution.partnerId)}::uuid[],
      ${signatureArrays(col((c) => c.signed))},
      ${col((c) => c.held !== undefined)}::boolean[],
      ${col((c) => c.held?.partner_client_id ?? null)}::text[],
      ${col((c) => c.held?.status ?? null)}::text[],
      ${col((c) => c.held?.active ?? null)}::boolean[],
      ${col((c) => c.execution.clientId)}::bigint[],
      ${col((c) => c.execution.ref)}::text[],
      ${col((c) => c.execution.tokenHash.toString("hex"))}::text[],
      ${col((c) => (c.execution.clock === systemClock ? null : isoFromMs(c.execution.clock.nowMs())))}::timestamptz[],
      ${terms.map((t) => t.side)}::text[],
      ${terms.map((t) => t.price)}::numeric[],
      ${terms.map((t) => t.debit)}::numeric[],
      ${terms.map((t) => t.debitAsset)}::text[],
      ${terms.map((t) => t.credit)}::numeric[],
      ${terms.map((t) => t.creditAsset)}::text[],
      ${terms.map((t) => t.fee)}::numeric[],
      ${terms.map((t) => t.feeAsset)}::text[],
      ${terms.map((t) => t.vat)}::numeric[],
      ${col((c) => c.execution.slot)}::smallint[],
      ${col((c) => c.execution.legs.length)}::integer[],
      ${legs.map((l) => l.kind)}::text[], ${legs.map((l) => l.clientId)}::bigint[],
      ${legs.map((l) => l.assetId)}::text[], ${legs.map((l) => moneyToPg(l.amount))}::numeric[]
    ) AS b ORDER BY b.item
  `.execute(db);
  return batchOutcomes<Selectable<OrdersTable>>("execute_quotes", rows, calls.length);
}

/**
 * The execute's client argument: its id, or, when the request was judged by the client's facts its
 * process kept with the quote, client_standing_held() (migration 0023), which first checks that the
 * client's row still holds them (else SQLSTATE CP006, and nothing is written) and then gives the id.
 */
function clientArgument(e: QuoteExecution, held: TradingClient | undefined): RawBuilder<unknown> {
  if (held === undefined) return sql`${e.clientId}`;
  if (held.id !== e.clientId) throw new Error("the client held is not the execution's client");
  return sql`client_standing_held(${e.partnerId}::uuid, ${held.id}::bigint, ${held.partner_client_id},
    ${held.status}, ${held.active}::boolean)`;
}

function quoteRow(r: QuoteRowText): QuoteRow {
  return {
    ...r,
    price: moneyFromPg(r.price),
    base_amount: moneyFromPg(r.base_amount),
    quote_amount: moneyFromPg(r.quote_amount),
    fee: moneyFromPg(r.fee),
    vat: moneyFromPg(r.vat),
  };
}

/** What an execution is decided on, read in one statement (without locking). */
export interface ExecutionFacts {
  /** The partner's client (judgeClient decides on it), null when there is none. */
  client: TradingClient | null;
  /** The quote behind the token, if this client may still execute it: unspent and not expired. */
  quote: QuoteRow | undefined;
}

/** The client and the quote behind a token, in one statement: an execution decides on these. */
export async function findExecutionFacts(
  db: Q,
  partnerId: string,
  partnerClientId: string,
  tokenHash: Buffer,
  clock: Clock,
): Promise<ExecutionFacts> {
  const now = dbNow(clock);
  const { rows } = await sql<
    Partial<QuoteRowText> & { client: ExecutionFacts["client"] }
  >`${sql.raw(preparedMarker)}
    WITH c AS (SELECT id, partner_client_id, status, active FROM clients
                WHERE partner_id = ${partnerId} AND partner_client_id = ${partnerClientId}),
         u AS (SELECT q.id, q.pair_id, p.base_id, p.quote_id, q.side, q.price::text AS price,
                      q.base_amount::text AS base_amount, q.quote_amount::text AS quote_amount,
                      q.fee::text AS fee, q.vat::text AS vat
                 FROM quotes q JOIN asset_pairs p ON p.id = q.pair_id JOIN c ON q.client_id = c.id
                WHERE q.token_hash = ${tokenHash} AND q.partner_id = ${partnerId}
                  AND q.spent_at IS NULL AND q.expires_at > ${now})
    SELECT (SELECT json_build_object('id', id, 'partner_client_id', partner_client_id, 'status', status,
                                     'active', active) FROM c) AS client,
           u.*
    FROM (VALUES (1)) AS one (x) LEFT JOIN u ON true
  `.execute(db);
  const r = rows[0];
  if (r === undefined) throw new Error("findExecutionFacts: no row");
  const { client, ...quote } = r;
  return {
    client: client ?? null,
    quote: quote.id === null || quote.id === undefined ? undefined : quoteRow(quote as QuoteRowText),
  };
}
