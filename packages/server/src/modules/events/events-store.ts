// Queries on events (migration 0013). Writes take the transaction of the change they report.

import { sql } from "kysely";
import type { Db } from "../../db/database.ts";
import type { Tx } from "../../db/transaction.ts";
import type { EventPosition } from "./event-views.ts";

type Q = Db | Tx;

export interface ClientEventRecord {
  partnerId: string;
  clientId: number;
  type: "client.created" | "client.updated" | "client.status_changed" | "client.activation_changed";
  /** The client exactly as the API returns it. */
  data: unknown;
  /** timestamptz text: when the change happened */
  createdAt: string;
}

/**
 * Records a client event in the transaction of its change. Order and document events are written
 * by the database itself (the triggers of migration 0013), whatever path makes the row.
 */
export async function recordClientEvent(tx: Tx, e: ClientEventRecord): Promise<void> {
  await tx
    .insertInto("events")
    .values({
      partner_id: e.partnerId,
      client_id: e.clientId,
      type: e.type,
      data: JSON.stringify(e.data),
      created_at: e.createdAt,
    })
    .execute();
}

export interface StoredEvent {
  seq: string;
  txid: string;
  type: string;
  created_at: string;
  order_id: number | null;
  document_id: number | null;
  data: unknown;
  partner_client_id: string;
}

export interface EventQuery {
  after: EventPosition | null;
  types: readonly string[];
  clientId: number | null;
  limit: number;
}

/**
 * The partner's events after `after`, in feed order, only those of transactions older than the
 * oldest one still in flight: every one of them has ended, so nothing can ever be inserted before
 * them in this order (migration 0013).
 */
export async function readEvents(db: Q, partnerId: string, q: EventQuery): Promise<StoredEvent[]> {
  const after =
    q.after === null
      ? sql``
      : sql`AND (e.txid, e.seq) > (${q.after.txid.toString()}::xid8, ${q.after.seq.toString()}::bigint)`;
  const types = q.types.length === 0 ? sql`` : sql`AND e.type IN (${sql.join([...q.types])})`;
  const client = q.clientId === null ? sql`` : sql`AND e.client_id = ${q.clientId}`;
  const { rows } = await sql<StoredEvent>`
    SELECT e.seq::text AS seq, e.txid::text AS txid, e.type, e.created_at, e.order_id, e.document_id,
           e.data, c.partner_client_id
    FROM events e JOIN clients c ON c.id = e.client_id
    WHERE e.partner_id = ${partnerId}
      AND e.txid < pg_snapshot_xmin(pg_current_snapshot())
      ${after} ${types} ${client}
    ORDER BY e.txid, e.seq
    LIMIT ${q.limit}
  `.execute(db);
  return rows;
}

/**
 * One event of the partner, by its position; undefined when it is not the partner's, not committed,
 * or gone. Unlike the feed it needs no ordering rule: a committed event is final.
 */
export async function readEvent(
  db: Q,
  partnerId: string,
  at: EventPosition,
): Promise<StoredEvent | undefined> {
  const { rows } = await sql<StoredEvent>`
    SELECT e.seq::text AS seq, e.txid::text AS txid, e.type, e.created_at, e.order_id, e.document_id,
           e.data, c.partner_client_id
    FROM events e JOIN clients c ON c.id = e.client_id
    WHERE e.partner_id = ${partnerId}
      AND e.txid = ${at.txid.toString()}::xid8 AND e.seq = ${at.seq.toString()}::bigint
  `.execute(db);
  return rows[0];
}

/** Deletes up to `batch` events written before `beforeIso`; returns how many went. */
export async function deleteEventsBefore(db: Q, beforeIso: string, batch: number): Promise<number> {
  const result = await sql`
    DELETE FROM events WHERE ctid = ANY (ARRAY(
      SELECT ctid FROM events WHERE created_at < ${beforeIso}::timestamptz LIMIT ${batch}))
  `.execute(db);
  return Number(result.numAffectedRows ?? 0n);
}
