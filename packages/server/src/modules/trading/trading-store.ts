// Queries for trading: a pair as one partner sees it (availability, fee rate, VAT, staleness by
// the database's clock), and quotes, found and spent by the hash of their token.

import { type RawBuilder, type Selectable, sql } from "kysely";
import { type Db, preparedMarker } from "../../db/database.ts";
import type { OrdersTable } from "../../db/schema.ts";
import type { Tx } from "../../db/transaction.ts";
import { houseSlot, type Leg, legArguments } from "../ledger/index.ts";

type Q = Db | Tx;

export interface TradingPair {
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

/** The pair if it exists and is not withheld from the partner. */
export async function findTradingPair(
  db: Q,
  partnerId: string,
  pairId: string,
  now: RawBuilder<string>,
  staleAfterSeconds: number,
): Promise<TradingPair | undefined> {
  const { rows } = await sql<TradingPair>`
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
    WHERE p.id = ${pairId} AND coalesce(pp.available, true)
  `.execute(db);
  return rows[0];
}

export interface QuoteRow {
  id: number;
  pair_id: string;
  base_id: string;
  quote_id: string;
  side: "buy" | "sell";
  price: string;
  base_amount: string;
  quote_amount: string;
  fee: string;
  vat: string;
}

export async function insertQuote(
  db: Q,
  row: {
    tokenHash: Buffer;
    partnerId: string;
    clientId: number;
    pairId: string;
    side: "buy" | "sell";
    price: string;
    baseAmount: string;
    quoteAmount: string;
    fee: string;
    vat: string;
    vatPercentage: string | null;
    lifetimeSeconds: number;
  },
  now: RawBuilder<string>,
): Promise<void> {
  await sql`
    INSERT INTO quotes (token_hash, partner_id, client_id, pair_id, side, price, base_amount, quote_amount,
                        fee, vat, vat_percentage, created_at, expires_at)
    VALUES (${row.tokenHash}, ${row.partnerId}, ${row.clientId}, ${row.pairId}, ${row.side}, ${row.price},
            ${row.baseAmount}, ${row.quoteAmount}, ${row.fee}, ${row.vat}, ${row.vatPercentage}, ${now},
            ${now} + make_interval(secs => ${row.lifetimeSeconds}))
  `.execute(db);
}

/** The SQLSTATE execute_quote() raises when the token's quote cannot be spent (any more). */
export const unspendableTokenCode = "CP002";

export interface QuoteExecution {
  partnerId: string;
  clientId: number;
  ref: string | null;
  tokenHash: Buffer;
  now: RawBuilder<string>;
  quote: QuoteRow;
  legs: readonly Leg[];
}

/**
 * Records the trade of a quote in one statement, with the database's execute_quote() (migration
 * 0009): the order first, then the quote spent and linked to it, then its legs posted. Funds gone
 * since the quote leave the order rejected, nothing posted and the quote spent. Throws the
 * database's error: SQLSTATE `unspendableTokenCode` for a token that cannot be spent, 23505 on
 * orders_partner_order_ref_key for a reference already taken; nothing is written when it throws.
 */
export async function executeQuote(db: Q, e: QuoteExecution): Promise<Selectable<OrdersTable>> {
  const q = e.quote;
  const buying = q.side === "buy";
  const { rows } = await sql<Selectable<OrdersTable>>`${sql.raw(preparedMarker)}
    SELECT * FROM execute_quote(
      ${e.partnerId}, ${e.clientId}, ${e.ref}, ${e.tokenHash}, ${e.now}, ${q.side}, ${q.price}::numeric,
      ${buying ? q.base_amount : q.quote_amount}::numeric, ${buying ? q.base_id : q.quote_id},
      ${buying ? q.quote_amount : q.base_amount}::numeric, ${buying ? q.quote_id : q.base_id},
      ${q.fee}::numeric, ${q.quote_id}, ${q.vat}::numeric, ${legArguments(e.legs, houseSlot(e.clientId))})
  `.execute(db);
  const row = rows[0];
  if (row === undefined) throw new Error("execute_quote returned no order");
  return row;
}

/** The quote behind a token, if this client may still execute it (read without locking). */
export async function findUsableQuote(
  db: Q,
  tokenHash: Buffer,
  partnerId: string,
  clientId: number,
  now: RawBuilder<string>,
): Promise<QuoteRow | undefined> {
  const { rows } = await sql<QuoteRow>`
    SELECT q.id, q.pair_id, p.base_id, p.quote_id, q.side, q.price::text AS price,
           q.base_amount::text AS base_amount, q.quote_amount::text AS quote_amount,
           q.fee::text AS fee, q.vat::text AS vat
    FROM quotes q JOIN asset_pairs p ON p.id = q.pair_id
    WHERE q.token_hash = ${tokenHash} AND q.partner_id = ${partnerId} AND q.client_id = ${clientId}
      AND q.spent_at IS NULL AND q.expires_at > ${now}
  `.execute(db);
  return rows[0];
}
