// Queries for funding: the facts a request is judged on, and the order posted in one statement.

import type { RawBuilder, Selectable } from "kysely";
import { sql } from "kysely";
import { type Db, preparedMarker } from "../../db/database.ts";
import { type BatchItem, batchOutcomes, type RefusedInBatch } from "../../db/errors.ts";
import { moneyToPg } from "../../db/numeric.ts";
import type { OrdersTable } from "../../db/schema.ts";
import type { Tx } from "../../db/transaction.ts";
import { type Leg, legArguments, orderLegs } from "../ledger/index.ts";
import { orderColumnList } from "../orders/index.ts";
import { partnerArgument, type SignatureToRecord, signatureArrays } from "../partners/index.ts";

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
    SELECT ${orderColumnList("o")} FROM fund_order(${partnerArgument(order.partnerId, signed)}, ${clientArgument(order, held)}, ${order.ref}, ${order.type},
                             ${order.assetId}, ${moneyToPg(order.amount)}::numeric,
                             ${legArguments(order.legs, order.slot)}) AS o
  `.execute(db);
  const row = rows[0];
  if (row === undefined) throw new Error("fund_order returned no order");
  return row;
}

/** One order of fundOrders(): as fundOrder() takes it. */
export interface FundingCall {
  order: FundingOrder;
  signed?: SignatureToRecord | undefined;
  held?: HeldFacts | undefined;
}

export type FundingOutcome = Selectable<OrdersTable> | RefusedInBatch;

/**
 * Several orders in one statement and one transaction, with the database's fund_orders()
 * (migration 0024): each as fundOrder() would make it, in a block of its own, so that one refused
 * undoes only its own work. The calls must be in ascending order of house slot and partner, one
 * per slot and partner (migration 0024 says why). Answers each call's order, or its error
 * (RefusedInBatch), in the calls' order; throws, with nothing written, when the statement fails
 * as a whole (the connection lost, a timeout).
 */
export async function fundOrders(db: Db | Tx, calls: readonly FundingCall[]): Promise<FundingOutcome[]> {
  const col = <T>(pick: (call: FundingCall) => T): T[] => calls.map(pick);
  const legs: Leg[] = [];
  for (const { order, held } of calls) {
    const ordered = orderLegs(order.legs, order.slot);
    if (ordered.length !== 2) throw new Error("a funding order has two legs");
    legs.push(...ordered);
    if (held !== undefined && held.client.id !== order.clientId)
      throw new Error("the facts held are not the order's client's");
  }
  const { rows } = await sql<Selectable<OrdersTable> & BatchItem>`${sql.raw(preparedMarker)}
    SELECT b.item, b.error_code, b.error_constraint, ${orderColumnList("(b.o)")} FROM fund_orders(
      ${col((c) => c.order.partnerId)}::uuid[],
      ${signatureArrays(col((c) => c.signed))},
      ${col((c) => c.held !== undefined)}::boolean[],
      ${col((c) => c.held?.client.partner_client_id ?? null)}::text[],
      ${col((c) => c.held?.client.status ?? null)}::text[],
      ${col((c) => c.held?.client.active ?? null)}::boolean[],
      ${col((c) => c.held?.asset.type ?? null)}::text[],
      ${col((c) => c.held?.asset.published ?? null)}::boolean[],
      ${col((c) => c.held?.asset.depositable ?? null)}::boolean[],
      ${col((c) => c.held?.asset.withdrawable ?? null)}::boolean[],
      ${col((c) => c.order.clientId)}::bigint[],
      ${col((c) => c.order.ref)}::text[],
      ${col((c) => c.order.type)}::text[],
      ${col((c) => c.order.assetId)}::text[],
      ${col((c) => moneyToPg(c.order.amount))}::numeric[],
      ${col((c) => c.order.slot)}::smallint[],
      ${legs.map((l) => l.kind)}::text[], ${legs.map((l) => l.clientId)}::bigint[],
      ${legs.map((l) => l.assetId)}::text[], ${legs.map((l) => moneyToPg(l.amount))}::numeric[]
    ) AS b ORDER BY b.item
  `.execute(db);
  return batchOutcomes<Selectable<OrdersTable>>("fund_orders", rows, calls.length);
}
