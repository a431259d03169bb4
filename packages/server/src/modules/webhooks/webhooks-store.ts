// Queries on webhook endpoints, deliveries and attempts (migration 0014). "Now" is the database's
// (db/now.ts), so every API process judges due deliveries by one clock.

import { sql } from "kysely";
import type { Db } from "../../db/database.ts";
import { dbNow } from "../../db/now.ts";
import type { Tx } from "../../db/transaction.ts";
import type { Clock } from "../../platform/clock.ts";
import type { AttemptRow, DeliveryRow, EndpointRow } from "./webhook-views.ts";

type Q = Db | Tx;

/** A new endpoint, following the feed from now on (its position: the oldest transaction in flight). */
export async function insertEndpoint(
  db: Q,
  clock: Clock,
  e: { id: string; partnerId: string; url: string; eventTypes: readonly string[] },
): Promise<EndpointRow> {
  const now = dbNow(clock);
  const { rows } = await sql<EndpointRow>`
    INSERT INTO webhook_endpoints (id, partner_id, url, event_types, cursor_txid, cursor_seq, created_at, updated_at)
    VALUES (${e.id}, ${e.partnerId}, ${e.url}, ${sql.val([...e.eventTypes])}::text[],
            pg_snapshot_xmin(pg_current_snapshot()), 0, ${now}, ${now})
    RETURNING *, cursor_txid::text AS cursor_txid, cursor_seq::text AS cursor_seq
  `.execute(db);
  return rows[0]!;
}

export async function countEndpoints(db: Q, partnerId: string): Promise<number> {
  const row = await db
    .selectFrom("webhook_endpoints")
    .select((eb) => eb.fn.countAll<string>().as("n"))
    .where("partner_id", "=", partnerId)
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

const endpointColumns = sql<EndpointRow>`id, partner_id, url, event_types, status, cursor_txid::text AS cursor_txid,
  cursor_seq::text AS cursor_seq, created_at, updated_at`;

/** A partner's endpoints (every partner's when partnerId is null), oldest first. */
export async function listEndpoints(db: Q, partnerId: string | null): Promise<EndpointRow[]> {
  const where = partnerId === null ? sql`` : sql`WHERE partner_id = ${partnerId}`;
  const { rows } = await sql<EndpointRow>`
    SELECT ${endpointColumns} FROM webhook_endpoints ${where} ORDER BY created_at, id LIMIT 1000
  `.execute(db);
  return rows;
}

export async function findEndpoint(
  db: Q,
  partnerId: string | null,
  id: string,
): Promise<EndpointRow | undefined> {
  const owner = partnerId === null ? sql`` : sql`AND partner_id = ${partnerId}`;
  const { rows } = await sql<EndpointRow>`
    SELECT ${endpointColumns} FROM webhook_endpoints WHERE id = ${id} ${owner}
  `.execute(db);
  return rows[0];
}

export async function deleteEndpoint(db: Q, partnerId: string, id: string): Promise<boolean> {
  const r = await db
    .deleteFrom("webhook_endpoints")
    .where("partner_id", "=", partnerId)
    .where("id", "=", id)
    .executeTakeFirst();
  return Number(r.numDeletedRows) > 0;
}

export async function setEndpointStatus(
  db: Q,
  clock: Clock,
  id: string,
  status: "enabled" | "failing" | "disabled",
  onlyFrom: readonly string[] | null = null,
): Promise<EndpointRow | undefined> {
  const from = onlyFrom === null ? sql`` : sql`AND status IN (${sql.join([...onlyFrom])})`;
  const { rows } = await sql<EndpointRow>`
    UPDATE webhook_endpoints SET status = ${status}, updated_at = ${dbNow(clock)}
    WHERE id = ${id} ${from}
    RETURNING ${endpointColumns}
  `.execute(db);
  return rows[0];
}

/** One endpoint, locked for the transaction (an operator's change of its status). */
export async function findEndpointForUpdate(tx: Tx, id: string): Promise<EndpointRow | undefined> {
  const { rows } = await sql<EndpointRow>`
    SELECT ${endpointColumns} FROM webhook_endpoints WHERE id = ${id} FOR UPDATE
  `.execute(tx);
  return rows[0];
}

/** Up to `n` endpoints to dispatch (not disabled), locked; others' locked ones are skipped. */
export async function lockEndpointsToDispatch(tx: Tx, n: number): Promise<EndpointRow[]> {
  const { rows } = await sql<EndpointRow>`
    SELECT ${endpointColumns} FROM webhook_endpoints WHERE status <> 'disabled'
    ORDER BY updated_at LIMIT ${n} FOR UPDATE SKIP LOCKED
  `.execute(tx);
  return rows;
}

export async function moveEndpointCursor(tx: Tx, id: string, txid: string, seq: string): Promise<void> {
  await sql`UPDATE webhook_endpoints SET cursor_txid = ${txid}::xid8, cursor_seq = ${seq}::bigint WHERE id = ${id}`.execute(
    tx,
  );
}

export interface NewDelivery {
  endpointId: string;
  eventId: string;
  eventType: string;
  payload: string;
}

export async function insertDeliveries(
  db: Q,
  clock: Clock,
  deliveries: readonly NewDelivery[],
): Promise<DeliveryRow[]> {
  if (deliveries.length === 0) return [];
  const now = dbNow(clock);
  return db
    .insertInto("webhook_deliveries")
    .values(
      deliveries.map((d) => ({
        endpoint_id: d.endpointId,
        event_id: d.eventId,
        event_type: d.eventType,
        payload: d.payload,
        next_attempt_at: now,
        created_at: now,
      })),
    )
    .returningAll()
    .execute();
}

export interface ClaimedDelivery extends DeliveryRow {
  url: string;
}

/**
 * Claims up to `n` due deliveries of endpoints that are not disabled, leaving out `busy` endpoints:
 * each is leased until now + `leaseMs` (its next_attempt_at), so no other worker takes it meanwhile,
 * and a worker that dies leaves it due again when the lease ends.
 */
export async function claimDue(
  db: Q,
  clock: Clock,
  n: number,
  busy: readonly string[],
  leaseMs: number,
): Promise<ClaimedDelivery[]> {
  const now = dbNow(clock);
  const notBusy = busy.length === 0 ? sql`` : sql`AND d.endpoint_id NOT IN (${sql.join([...busy])})`;
  const { rows } = await sql<ClaimedDelivery>`
    WITH due AS (
      SELECT d.id FROM webhook_deliveries d
      JOIN webhook_endpoints e ON e.id = d.endpoint_id AND e.status <> 'disabled'
      WHERE d.status = 'pending' AND d.next_attempt_at <= ${now} ${notBusy}
      ORDER BY d.next_attempt_at, d.id
      LIMIT ${n}
      FOR UPDATE OF d SKIP LOCKED
    )
    UPDATE webhook_deliveries d
    SET next_attempt_at = ${now} + ${`${leaseMs} milliseconds`}::interval, attempts = d.attempts + 1
    FROM due, webhook_endpoints e
    WHERE d.id = due.id AND e.id = d.endpoint_id
    RETURNING d.*, e.url
  `.execute(db);
  return rows;
}

export interface AttemptRecord {
  deliveryId: number;
  statusCode: number | null;
  error: string | null;
  durationMs: number;
  /** delivered, or pending again at `retryAt`, or failed (the retry period is over). */
  outcome: { status: "delivered" } | { status: "pending"; retryInMs: number } | { status: "failed" };
}

/** Records an attempt and the delivery's new state; returns the endpoint id and whether it failed for good. */
export async function recordAttempt(tx: Tx, clock: Clock, a: AttemptRecord): Promise<void> {
  const now = dbNow(clock);
  await tx
    .insertInto("webhook_attempts")
    .values({
      delivery_id: a.deliveryId,
      attempted_at: sql<string>`${now}`,
      status_code: a.statusCode,
      error: a.error,
      duration_ms: a.durationMs,
    })
    .execute();
  const o = a.outcome;
  const next =
    o.status === "pending" ? sql`${now} + ${`${o.retryInMs} milliseconds`}::interval` : sql`next_attempt_at`;
  await sql`
    UPDATE webhook_deliveries
    SET status = ${o.status}, last_status_code = ${a.statusCode}, last_error = ${a.error},
        next_attempt_at = ${next},
        delivered_at = CASE WHEN ${o.status} = 'delivered' THEN ${now} ELSE delivered_at END
    WHERE id = ${a.deliveryId}
  `.execute(tx);
}

/** How long ago (ms, by the database's clock) the delivery was made. */
export async function deliveryAgeMs(db: Q, clock: Clock, id: number): Promise<number> {
  const { rows } = await sql<{ ms: string }>`
    SELECT (extract(epoch FROM (${dbNow(clock)} - created_at)) * 1000)::bigint::text AS ms
    FROM webhook_deliveries WHERE id = ${id}
  `.execute(db);
  return Number(rows[0]?.ms ?? 0);
}

export async function listDeliveries(
  db: Q,
  endpointId: string,
  limit: number,
  beforeId: number | null,
): Promise<{ deliveries: DeliveryRow[]; attempts: AttemptRow[] }> {
  let q = db.selectFrom("webhook_deliveries").selectAll().where("endpoint_id", "=", endpointId);
  if (beforeId !== null) q = q.where("id", "<", beforeId);
  const deliveries = await q.orderBy("id", "desc").limit(limit).execute();
  if (deliveries.length === 0) return { deliveries, attempts: [] };
  const attempts = await db
    .selectFrom("webhook_attempts")
    .selectAll()
    .where(
      "delivery_id",
      "in",
      deliveries.map((d) => d.id),
    )
    .orderBy("id")
    .execute();
  return { deliveries, attempts };
}

/** Makes the endpoint's latest delivery of `eventId` due now again; false when there is none. */
export async function redeliver(
  db: Q,
  clock: Clock,
  endpointId: string,
  eventId: string,
): Promise<DeliveryRow | undefined> {
  const now = dbNow(clock);
  const { rows } = await sql<DeliveryRow>`
    UPDATE webhook_deliveries SET status = 'pending', next_attempt_at = ${now}
    WHERE id = (SELECT max(id) FROM webhook_deliveries WHERE endpoint_id = ${endpointId} AND event_id = ${eventId})
    RETURNING *
  `.execute(db);
  return rows[0];
}
