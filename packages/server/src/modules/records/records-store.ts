// The back office's reads (docs/decisions.md, "Back office records"): orders across partners with
// keyset paging (never OFFSET), an order's postings, the house accounts and the totals per asset,
// a client's orders and documents, and a document's stored file. Each list is newest first on
// (created_at, id) or (at, id), and each filter has an index in that order (migration 0017).

import { sql } from "kysely";
import type { Db } from "../../db/database.ts";
import type { DocumentType, OrderSource, OrderStatus, OrderType } from "../../db/schema.ts";
import type { Tx } from "../../db/transaction.ts";

type Q = Db | Tx;

/** Where a page starts: after this (created_at, id), newest first. */
export interface Cursor {
  at: string;
  id: number;
}

export interface OrderSearch {
  partnerId: string | null;
  clientId: number | null;
  type: OrderType | null;
  source: OrderSource | null;
  status: OrderStatus | null;
  /** timestamptz text, inclusive */
  from: string | null;
  to: string | null;
}

export interface OrderListRow {
  id: number;
  partner_id: string;
  client_id: number;
  partner_client_id: string;
  partner_order_ref: string | null;
  type: OrderType;
  source: OrderSource;
  status: OrderStatus;
  price: string | null;
  credit: string | null;
  credit_asset_id: string | null;
  debit: string | null;
  debit_asset_id: string | null;
  fee: string;
  fee_asset_id: string;
  vat: string;
  created_at: string;
  transitioned_at: string;
  updated_at: string;
}

/** One page of orders (`limit` rows at most) matching `f`, after `after`. */
export async function searchOrders(
  db: Q,
  f: OrderSearch,
  after: Cursor | null,
  limit: number,
): Promise<OrderListRow[]> {
  return (await searchOrdersQuery(db, f, after, limit).execute()) as OrderListRow[];
}

/**
 * searchOrders()'s statement, newest first: every filter has an index of migration 0017 in that
 * order, read backward (migration 0029; records-plans.test.ts).
 */
export function searchOrdersQuery(db: Q, f: OrderSearch, after: Cursor | null, limit: number) {
  let q = db
    .selectFrom("orders as o")
    .innerJoin("clients as c", "c.id", "o.client_id")
    .selectAll("o")
    .select("c.partner_client_id");
  if (f.partnerId !== null) q = q.where("o.partner_id", "=", f.partnerId);
  if (f.clientId !== null) q = q.where("o.client_id", "=", f.clientId);
  if (f.type !== null) q = q.where("o.type", "=", f.type);
  if (f.source !== null) q = q.where("o.source", "=", f.source);
  if (f.status !== null) q = q.where("o.status", "=", f.status);
  if (f.from !== null) q = q.where("o.created_at", ">=", f.from);
  if (f.to !== null) q = q.where("o.created_at", "<=", f.to);
  if (after !== null) {
    q = q.where(sql<boolean>`(o.created_at, o.id) < (${after.at}::timestamptz, ${after.id}::bigint)`);
  }
  return q.orderBy("o.created_at", "desc").orderBy("o.id", "desc").limit(limit);
}

export async function findOrderById(db: Q, id: number): Promise<OrderListRow | undefined> {
  const row = await db
    .selectFrom("orders as o")
    .innerJoin("clients as c", "c.id", "o.client_id")
    .selectAll("o")
    .select("c.partner_client_id")
    .where("o.id", "=", id)
    .executeTakeFirst();
  return row as OrderListRow | undefined;
}

export interface PostingRow {
  id: number;
  account_id: number;
  kind: string;
  partner_id: string;
  client_id: number | null;
  slot: number;
  asset_id: string;
  amount: string;
}

export async function orderPostings(db: Q, orderId: number): Promise<PostingRow[]> {
  return db
    .selectFrom("postings as p")
    .innerJoin("accounts as a", "a.id", "p.account_id")
    .select([
      "p.id",
      "p.account_id",
      "a.kind",
      "a.partner_id",
      "a.client_id",
      "a.slot",
      "p.asset_id",
      "p.amount",
    ])
    .where("p.order_id", "=", orderId)
    .orderBy("p.id")
    .execute();
}

export interface HouseAccountRow {
  kind: string;
  partner_id: string;
  partner_name: string;
  asset_id: string;
  balance: string;
  slots: number;
}

/** The partners' house accounts, their slots summed: one line per partner, kind and asset. */
export async function houseAccounts(db: Q): Promise<HouseAccountRow[]> {
  const { rows } = await sql<HouseAccountRow>`
    SELECT a.kind, a.partner_id, p.name AS partner_name, a.asset_id,
           sum(a.balance)::numeric(38, 8)::text AS balance, count(*)::int AS slots
      FROM accounts a JOIN partners p ON p.id = a.partner_id
     WHERE a.kind <> 'client'
     GROUP BY a.kind, a.partner_id, p.name, a.asset_id
     ORDER BY p.name, a.partner_id, a.kind, a.asset_id`.execute(db);
  return rows;
}

export interface AssetTotalRow {
  asset_id: string;
  clients: string;
  house: string;
  total: string;
}

/** Per asset: what clients hold, what house accounts hold, and the sum (zero when consistent). */
export async function assetTotals(db: Q): Promise<AssetTotalRow[]> {
  const { rows } = await sql<AssetTotalRow>`
    SELECT asset_id,
           coalesce(sum(balance) FILTER (WHERE kind = 'client'), 0)::numeric(38, 8)::text AS clients,
           coalesce(sum(balance) FILTER (WHERE kind <> 'client'), 0)::numeric(38, 8)::text AS house,
           sum(balance)::numeric(38, 8)::text AS total
      FROM accounts GROUP BY asset_id ORDER BY asset_id`.execute(db);
  return rows;
}

export async function findClientId(
  db: Q,
  partnerId: string,
  partnerClientId: string,
): Promise<number | undefined> {
  const row = await db
    .selectFrom("clients")
    .select("id")
    .where("partner_id", "=", partnerId)
    .where("partner_client_id", "=", partnerClientId)
    .executeTakeFirst();
  return row?.id;
}

export interface ClientBalanceLine {
  asset_id: string;
  balance: string;
  held: string;
}

export async function clientAccounts(db: Q, clientId: number): Promise<ClientBalanceLine[]> {
  return db
    .selectFrom("accounts")
    .select(["asset_id", "balance", "held"])
    .where("kind", "=", "client")
    .where("client_id", "=", clientId)
    .orderBy("asset_id")
    .execute();
}

export interface DocumentListRow {
  id: number;
  type: DocumentType;
  created_at: string;
  front_file_key: string;
  front_type: string;
  back_file_key: string | null;
  back_type: string | null;
}

/** The client's documents, newest first, with the stored type of each file (at most `limit`). */
export async function clientDocuments(db: Q, clientId: number, limit: number): Promise<DocumentListRow[]> {
  return db
    .selectFrom("client_documents as d")
    .innerJoin("document_files as f", "f.key", "d.front_file_key")
    .leftJoin("document_files as b", "b.key", "d.back_file_key")
    .select([
      "d.id",
      "d.type",
      "d.created_at",
      "d.front_file_key",
      "f.content_type as front_type",
      "d.back_file_key",
      "b.content_type as back_type",
    ])
    .where("d.client_id", "=", clientId)
    .orderBy("d.created_at", "desc")
    .orderBy("d.id", "desc")
    .limit(limit)
    .execute();
}

/** A document's file by side, with the client it belongs to (for the audit entry of its reading). */
export async function documentFile(
  db: Q,
  documentId: number,
  side: "front" | "back",
): Promise<{ key: string; content_type: string; partner_id: string; partner_client_id: string } | undefined> {
  return db
    .selectFrom("client_documents as d")
    .innerJoin("document_files as f", "f.key", side === "front" ? "d.front_file_key" : "d.back_file_key")
    .innerJoin("clients as c", "c.id", "d.client_id")
    .select(["f.key", "f.content_type", "c.partner_id", "c.partner_client_id"])
    .where("d.id", "=", documentId)
    .executeTakeFirst();
}
