// Queries for funding: the facts a request is judged on, and the order posted in one statement.

import type { Selectable } from "kysely";
import { sql } from "kysely";
import { type Db, preparedMarker } from "../../db/database.ts";
import { moneyToPg } from "../../db/numeric.ts";
import type { OrdersTable } from "../../db/schema.ts";
import type { Tx } from "../../db/transaction.ts";
import { type Leg, legArguments } from "../ledger/index.ts";
import { partnerArgument, type SignatureToRecord } from "../partners/index.ts";

export interface FundingFacts {
  client: { id: number; partner_client_id: string; status: string; active: boolean } | null;
  asset: { type: string; published: boolean; depositable: boolean; withdrawable: boolean } | null;
}

/** The client and the asset of a funding request, read in one query. */
export async function fundingFacts(
  db: Db,
  partnerId: string,
  partnerClientId: string,
  assetId: string,
): Promise<FundingFacts> {
  const { rows } = await sql<FundingFacts>`${sql.raw(preparedMarker)}
    SELECT
      (SELECT json_build_object('id', id, 'partner_client_id', partner_client_id, 'status', status, 'active', active)
         FROM clients WHERE partner_id = ${partnerId} AND partner_client_id = ${partnerClientId}) AS client,
      (SELECT json_build_object('type', type, 'published', published, 'depositable', depositable,
                                'withdrawable', withdrawable)
         FROM assets WHERE id = ${assetId}) AS asset
  `.execute(db);
  return rows[0]!;
}

export interface FundingOrder {
  partnerId: string;
  clientId: number;
  ref: string;
  type: "deposit" | "withdrawal";
  assetId: string;
  /** > 0, at scale 8 */
  amount: bigint;
  /** The order's legs and house slot (fundingLegs()). */
  legs: readonly Leg[];
  slot: number;
}

/**
 * Records a completed bank deposit or withdrawal and posts its legs in one statement, with the
 * database's fund_order() (migration 0011). Throws the database's error (db/errors.ts): funds
 * short for a withdrawal the available balance does not cover, a unique violation on
 * orders_partner_order_ref_key for a reference already taken; with `signed`, the statement also
 * records the request's signature (partnerArgument), and may throw what that raises. Nothing is
 * written, the record included, when it throws.
 */
export async function fundOrder(
  db: Db | Tx,
  order: FundingOrder,
  signed?: SignatureToRecord,
): Promise<Selectable<OrdersTable>> {
  const { rows } = await sql<Selectable<OrdersTable>>`${sql.raw(preparedMarker)}
    SELECT * FROM fund_order(${partnerArgument(order.partnerId, signed)}, ${order.clientId}, ${order.ref}, ${order.type},
                             ${order.assetId}, ${moneyToPg(order.amount)}::numeric,
                             ${legArguments(order.legs, order.slot)})
  `.execute(db);
  const row = rows[0];
  if (row === undefined) throw new Error("fund_order returned no order");
  return row;
}
