// Queries for trading: a pair as one partner sees it (availability, fee rate, VAT, staleness by
// the database's clock), and quotes, found and spent by the hash of their token.

import { type RawBuilder, type Selectable, sql } from "kysely";
import { type Db, preparedMarker } from "../../db/database.ts";
import { type BatchItem, batchOutcomes, type RefusedInBatch, raisedByStatement } from "../../db/errors.ts";
import { dbNow } from "../../db/now.ts";
import { moneyFromPg, moneyToPg } from "../../db/numeric.ts";
import type { OrdersTable } from "../../db/schema.ts";
import { isoFromMs } from "../../db/time.ts";
import type { Tx } from "../../db/transaction.ts";
import { type Clock, systemClock } from "../../platform/clock.ts";
import { type Leg, legArguments, orderLegs, RetryAlone } from "../ledger/index.ts";
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
 * is older than `staleAfterSeconds` by the database's clock (db/now.ts). Each argument is a value,
 * or an expression of the statement (a batch's columns).
 */
function pairQuery(
  partnerId: string | RawBuilder<unknown>,
  pairId: string | RawBuilder<unknown>,
  now: RawBuilder<unknown>,
  staleAfterSeconds: number | RawBuilder<unknown>,
) {
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
): Promise<HeldQuoteAnswer> {
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

/** What a quote's statement answers: whether it stored the quote, and the facts it read. */
export interface HeldQuoteAnswer {
  stored: boolean;
  facts: QuoteFacts;
}

/** One quote of insertQuotesIfHeld(): as insertQuoteIfHeld() takes it. */
export interface HeldQuoteCall {
  row: NewQuote;
  held: QuoteHeld;
  clock: Clock;
  signed?: SignatureToRecord | undefined;
}

/**
 * Several quotes in one statement and one transaction (docs/decisions.md, "Quotes committed
 * together"), each as insertQuoteIfHeld() stores it: its facts read as findQuoteFacts() reads them,
 * the quote inserted only when they are what its `held` says, its signature recorded only when
 * the quote goes in, all in the statement's one snapshot. One text for any number of quotes (their
 * values in arrays, a row each), so that PostgreSQL plans it once per connection. Answers each
 * call's answer, in the calls' order. A quote takes no lock and writes one row, so a quote raises
 * only what its own statement would (a replayed signature, the partner's credentials changed):
 * the statement then writes nothing, and this throws RetryAlone, for each quote to go alone and be
 * answered as it would have been. Any other failure (the connection lost, a timeout) is thrown as
 * it is.
 */
export async function insertQuotesIfHeld(db: Q, calls: readonly HeldQuoteCall[]): Promise<HeldQuoteAnswer[]> {
  // A row per quote, by the names the statement gives its columns.
  const values = calls.map(({ row, held, clock, signed }) => ({
    partner_id: row.partnerId,
    partner_client_id: held.partnerClientId,
    pair_id: row.pairId,
    // Null: the database's now() (db/now.ts).
    now_given: clock === systemClock ? null : isoFromMs(clock.nowMs()),
    stale_after: held.staleAfterSeconds,
    token_hash: row.tokenHash.toString("hex"),
    side: row.side,
    price: moneyToPg(row.price),
    base_amount: moneyToPg(row.baseAmount),
    quote_amount: moneyToPg(row.quoteAmount),
    fee: moneyToPg(row.fee),
    vat: moneyToPg(row.vat),
    vat_percentage: row.vatPercentage,
    held_client_id: held.client.id,
    held_partner_client_id: held.client.partner_client_id,
    held_status: held.client.status,
    held_active: held.client.active,
    held_base_id: held.pair.base_id,
    held_quote_id: held.pair.quote_id,
    held_base_decimals: held.pair.base_decimals,
    held_quote_decimals: held.pair.quote_decimals,
    held_buy: moneyToPg(held.pair.buy),
    held_sell: moneyToPg(held.pair.sell),
    held_min_volume: moneyToPg(held.pair.min_volume),
    held_max_volume: moneyToPg(held.pair.max_volume),
    held_lifetime_s: held.pair.lifetime_s,
    held_fee_rate: moneyToPg(held.pair.fee_rate),
    held_vat_percentage: held.pair.vat_percentage === null ? null : moneyToPg(held.pair.vat_percentage),
    need_asset: held.need.asset,
    need_amount: moneyToPg(held.need.amount),
    // The signature to record (hex) or null, as batch_partner() takes it (migration 0024); the keys
    // and the allow-list go flattened, each quote's counts here.
    signature: signed === undefined ? null : Buffer.from(signed.signature).toString("hex"),
    expires_at: signed?.expiresAtIso ?? null,
    key_count: signed?.publicKeys.length ?? 0,
    ip_count: signed?.allowedIps.length ?? 0,
    rate_reads: signed?.budgets[0] ?? null,
    rate_writes: signed?.budgets[1] ?? null,
    rate_quotes: signed?.budgets[2] ?? null,
  }));
  const types: Record<keyof (typeof values)[number], string> = {
    partner_id: "uuid",
    partner_client_id: "text",
    pair_id: "text",
    now_given: "timestamptz",
    stale_after: "integer",
    token_hash: "text",
    side: "text",
    price: "numeric",
    base_amount: "numeric",
    quote_amount: "numeric",
    fee: "numeric",
    vat: "numeric",
    vat_percentage: "numeric",
    held_client_id: "bigint",
    held_partner_client_id: "text",
    held_status: "text",
    held_active: "boolean",
    held_base_id: "text",
    held_quote_id: "text",
    held_base_decimals: "integer",
    held_quote_decimals: "integer",
    held_buy: "numeric",
    held_sell: "numeric",
    held_min_volume: "numeric",
    held_max_volume: "numeric",
    held_lifetime_s: "integer",
    held_fee_rate: "numeric",
    held_vat_percentage: "numeric",
    need_asset: "text",
    need_amount: "numeric",
    signature: "text",
    expires_at: "timestamptz",
    key_count: "integer",
    ip_count: "integer",
    rate_reads: "integer",
    rate_writes: "integer",
    rate_quotes: "integer",
  };
  // Each column goes in as a subquery's value, not as a constant: a custom plan counts a constant
  // array's elements, so a batch of three would cost less than the generic plan (planned for ten),
  // and PostgreSQL would plan the statement again at every call (docs/decisions.md, "Quotes
  // committed together").
  const names = Object.keys(types) as (keyof typeof types)[];
  const input = names.map((name) => sql`(SELECT ${values.map((v) => v[name])}::${sql.raw(types[name])}[])`);
  for (const { row, held } of calls) {
    if (held.client.id !== row.clientId || held.pair.id !== row.pairId)
      throw new Error("the facts held are not the quote's client and pair");
  }
  const keys: string[] = [];
  const ips: string[] = [];
  for (const { signed } of calls) {
    if (signed === undefined) continue;
    keys.push(...signed.publicKeys);
    ips.push(...signed.allowedIps);
  }
  let rows: (QuoteFactsRow & { item: string; stored: boolean })[];
  try {
    ({ rows } = await sql<QuoteFactsRow & { item: string; stored: boolean }>`${sql.raw(preparedMarker)}
      WITH i AS (
        SELECT u.*, coalesce(u.now_given, now()) AS at,
               sum(u.key_count) OVER w - u.key_count + 1 AS key_from,
               sum(u.ip_count) OVER w - u.ip_count + 1 AS ip_from
        FROM unnest(${sql.join(input)}) WITH ORDINALITY AS u (${sql.raw(names.join(", "))}, n)
        WINDOW w AS (ORDER BY u.n)),
      x AS (
        SELECT i.n, c.id AS c_id, c.partner_client_id AS c_partner_client_id, c.status AS c_status,
               c.active AS c_active, pr.*,
               (SELECT (a.balance - a.held)::text FROM accounts a
                 WHERE a.kind = 'client' AND a.partner_id = i.partner_id AND a.client_id = c.id
                   AND a.asset_id = pr.base_id) AS base_available,
               (SELECT (a.balance - a.held)::text FROM accounts a
                 WHERE a.kind = 'client' AND a.partner_id = i.partner_id AND a.client_id = c.id
                   AND a.asset_id = pr.quote_id) AS quote_available
        FROM i
        LEFT JOIN LATERAL (SELECT id, partner_client_id, status, active FROM clients
                            WHERE partner_id = i.partner_id AND partner_client_id = i.partner_client_id) c ON true
        LEFT JOIN LATERAL (${pairQuery(sql`i.partner_id`, sql`i.pair_id`, sql`i.at`, sql`i.stale_after`)}) pr ON true),
      q AS (
        INSERT INTO quotes (token_hash, partner_id, client_id, pair_id, side, price, base_amount, quote_amount,
                            fee, vat, vat_percentage, created_at, expires_at)
        SELECT decode(i.token_hash, 'hex'),
               batch_partner(i.partner_id, i.signature, i.expires_at,
                             (${keys}::text[])[i.key_from : i.key_from + i.key_count - 1],
                             (${ips}::text[])[i.ip_from : i.ip_from + i.ip_count - 1],
                             i.rate_reads, i.rate_writes, i.rate_quotes),
               x.c_id, x.id, i.side, i.price, i.base_amount, i.quote_amount, i.fee, i.vat, i.vat_percentage,
               i.at, i.at + make_interval(secs => x.lifetime_s)
        FROM i JOIN x ON x.n = i.n
        WHERE (x.c_id, x.c_partner_client_id, x.c_status, x.c_active)
                = (i.held_client_id, i.held_partner_client_id, i.held_status, i.held_active)
          AND (x.id, x.base_id, x.quote_id, x.base_decimals, x.quote_decimals, x.buy::numeric, x.sell::numeric,
               x.tradable, x.min_volume::numeric, x.max_volume::numeric, x.lifetime_s, x.fee_rate::numeric, x.stale)
              = (i.pair_id, i.held_base_id, i.held_quote_id, i.held_base_decimals, i.held_quote_decimals, i.held_buy,
                 i.held_sell, true, i.held_min_volume, i.held_max_volume, i.held_lifetime_s, i.held_fee_rate, false)
          AND x.vat_percentage::numeric IS NOT DISTINCT FROM i.held_vat_percentage
          AND coalesce(CASE i.need_asset WHEN 'base' THEN x.base_available ELSE x.quote_available END::numeric, 0)
                >= i.need_amount
        ORDER BY i.n
        RETURNING token_hash)
      SELECT x.n::text AS item,
             CASE WHEN x.c_id IS NULL THEN NULL
                  ELSE json_build_object('id', x.c_id, 'partner_client_id', x.c_partner_client_id,
                                         'status', x.c_status, 'active', x.c_active) END AS client,
             x.id, x.base_id, x.quote_id, x.base_decimals, x.quote_decimals, x.buy, x.sell, x.tradable,
             x.min_volume, x.max_volume, x.lifetime_s, x.fee_rate, x.vat_percentage, x.stale,
             x.base_available, x.quote_available,
             EXISTS (SELECT 1 FROM q WHERE q.token_hash = decode(i.token_hash, 'hex')) AS stored
      FROM x JOIN i ON i.n = x.n
      ORDER BY x.n
    `.execute(db));
  } catch (err) {
    if (raisedByStatement(err)) throw new RetryAlone(err);
    throw err;
  }
  if (rows.length !== calls.length)
    throw new Error(`insertQuotesIfHeld: ${rows.length} rows for ${calls.length} quotes`);
  return rows.map(({ item, stored, ...facts }, i) => {
    if (Number(item) !== i + 1) throw new Error(`insertQuotesIfHeld: quote ${item} at ${i + 1}`);
    return { stored, facts: quoteFacts(facts) };
  });
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
