// Queries for funding: the facts a request is judged on, and the order posted in one statement.

import type { RawBuilder, Selectable } from "kysely";
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

export type ClientFacts = NonNullable<FundingFacts["client"]>;
export type AssetFacts = NonNullable<FundingFacts["asset"]>;

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

/** The facts a request was judged by, as its process kept them (modules/funding/kept-facts.ts). */
export interface HeldFacts {
  client: ClientFacts;
  asset: AssetFacts;
}

/**
 * The order's client argument: its id, or, when the request was judged by facts its process kept,
 * funding_facts_held() (migration 0022), which first checks that the client's and the asset's rows
 * still hold them (else SQLSTATE CP005, and nothing is written) and then gives the id.
 */
function clientArgument(order: FundingOrder, held: HeldFacts | undefined): RawBuilder<unknown> {
  if (held === undefined) return sql`${order.clientId}`;
  const { client, asset } = held;
  if (client.id !== order.clientId) throw new Error("the facts held are not the order's client's");
  return sql`funding_facts_held(${order.partnerId}::uuid, ${client.id}::bigint, ${client.partner_client_id},
    ${client.status}, ${client.active}::boolean, ${order.assetId}, ${asset.type}, ${asset.published}::boolean,
    ${asset.depositable}::boolean, ${asset.withdrawable}::boolean)`;
}

/**
 * Records a completed bank deposit or withdrawal and posts its legs in one statement, with the
 * database's fund_order() (migration 0011). Throws the database's error (db/errors.ts): funds
 * short for a withdrawal the available balance does not cover, a unique violation on
 * orders_partner_order_ref_key for a reference already taken; with `signed`, the statement also
 * records the request's signature (partnerArgument), and may throw what that raises; with `held`,
 * it first checks that the client and the asset are still as kept (clientArgument), and throws
 * funding_facts_changed when not. Nothing is written, the record included, when it throws.
 */
export async function fundOrder(
  db: Db | Tx,
  order: FundingOrder,
  signed?: SignatureToRecord,
  held?: HeldFacts,
): Promise<Selectable<OrdersTable>> {
  const { rows } = await sql<Selectable<OrdersTable>>`${sql.raw(preparedMarker)}
    SELECT * FROM fund_order(${partnerArgument(order.partnerId, signed)}, ${clientArgument(order, held)}, ${order.ref}, ${order.type},
                             ${order.assetId}, ${moneyToPg(order.amount)}::numeric,
                             ${legArguments(order.legs, order.slot)})
  `.execute(db);
  const row = rows[0];
  if (row === undefined) throw new Error("fund_order returned no order");
  return row;
}
