// The event feed (docs/reference.md, "Events"): a partner's events in one order that never changes
// once read, from a cursor, with filters; and the retention purge run by housekeeping.

import type { Db } from "../../db/database.ts";
import { isoFromMs } from "../../db/time.ts";
import type { Tx } from "../../db/transaction.ts";
import type { Clock } from "../../platform/clock.ts";
import { lookUpClient } from "../clients/index.ts";
import type { DocumentsService } from "../documents/index.ts";
import type { OrdersService } from "../orders/index.ts";
import {
  type EventFeed,
  type EventPosition,
  type EventType,
  type EventView,
  eventId,
  eventPosition,
} from "./event-views.ts";
import { deleteEventsBefore, readEvent, readEvents, type StoredEvent } from "./events-store.ts";

export interface EventFeedQuery {
  /** An event id (the cursor), or null for the oldest event kept. */
  after: string | null;
  types: readonly EventType[];
  partnerClientId: string | null;
  limit: number;
}

export type EventFeedResult =
  | ({ ok: true } & EventFeed)
  | { ok: false; error: "invalid_client" }
  | { ok: false; error: "invalid_cursor" };

const purgeBatch = 5_000;

export class EventsService {
  readonly #db: Db;
  readonly #clock: Clock;
  readonly #orders: OrdersService;
  readonly #documents: DocumentsService;
  readonly #retentionDays: number;

  constructor(deps: {
    db: Db;
    clock: Clock;
    orders: OrdersService;
    documents: DocumentsService;
    retentionDays: number;
  }) {
    this.#db = deps.db;
    this.#clock = deps.clock;
    this.#orders = deps.orders;
    this.#documents = deps.documents;
    this.#retentionDays = deps.retentionDays;
  }

  /**
   * Up to `limit` events after the cursor, oldest first. An event appears only once every
   * transaction that began before it has ended, so a reader never sees a later event before an
   * earlier one (migration 0013). Errors: invalid_cursor, invalid_client (2008).
   */
  async list(partnerId: string, q: EventFeedQuery, origin: string): Promise<EventFeedResult> {
    let after: EventPosition | null = null;
    if (q.after !== null) {
      after = eventPosition(q.after);
      if (after === null) return { ok: false, error: "invalid_cursor" };
    }
    let clientId: number | null = null;
    if (q.partnerClientId !== null) {
      const client = await lookUpClient(this.#db, partnerId, q.partnerClientId);
      if (!client.ok) return client;
      clientId = client.client.id;
    }
    const rows = await readEvents(this.#db, partnerId, {
      after,
      types: q.types,
      clientId,
      limit: q.limit + 1,
    });
    const page = rows.slice(0, q.limit);
    const items = await this.render(partnerId, page, origin);
    const last = page[page.length - 1];
    return {
      ok: true,
      items,
      next_cursor: last === undefined ? q.after : eventId({ txid: BigInt(last.txid), seq: BigInt(last.seq) }),
      has_more: rows.length > q.limit,
    };
  }

  /** One of the partner's events by its id; null when the id names none of them (or none at all). */
  async get(partnerId: string, id: string, origin: string): Promise<EventView | null> {
    const at = eventPosition(id);
    if (at === null) return null;
    const row = await readEvent(this.#db, partnerId, at);
    if (row === undefined) return null;
    const [event] = await this.render(partnerId, [row], origin);
    return event ?? null;
  }

  /**
   * For a follower of the feed inside a transaction of its own (webhook dispatch): up to `limit`
   * events after `after`, rendered, each with its position as text (txid, seq).
   */
  async after(
    tx: Tx,
    partnerId: string,
    after: EventPosition,
    types: readonly string[],
    limit: number,
    origin: string,
  ): Promise<{ events: EventView[]; last: { txid: string; seq: string } | null }> {
    const rows = await readEvents(tx, partnerId, { after, types, clientId: null, limit });
    const last = rows[rows.length - 1];
    return {
      events: await this.render(partnerId, rows, origin, tx),
      last: last === undefined ? null : { txid: last.txid, seq: last.seq },
    };
  }

  /** Stored events as the partner sees them; order and document events read their resource now. */
  async render(
    partnerId: string,
    rows: readonly StoredEvent[],
    origin: string,
    q: Db | Tx = this.#db,
  ): Promise<EventView[]> {
    const orderIds = rows.flatMap((r) => (r.order_id === null ? [] : [r.order_id]));
    const documentIds = rows.flatMap((r) => (r.document_id === null ? [] : [r.document_id]));
    // One after the other: a transaction runs one statement at a time.
    const orders = await this.#orders.views(partnerId, orderIds, q);
    const documents = await this.#documents.views(partnerId, documentIds, origin, q);
    const out: EventView[] = [];
    for (const r of rows) {
      const data =
        r.order_id !== null
          ? orders.get(r.order_id)
          : r.document_id !== null
            ? documents.get(r.document_id)
            : (r.data as EventView["data"]);
      // An order or a document is never deleted; should one be missing, its event is left out
      // rather than shown without its resource.
      if (data === undefined) continue;
      out.push({
        id: eventId({ txid: BigInt(r.txid), seq: BigInt(r.seq) }),
        type: r.type as EventType,
        created_at: r.created_at,
        partner_client_id: r.partner_client_id,
        data,
      });
    }
    return out;
  }

  /** Deletes the events older than the retention period; returns how many went. */
  async purge(): Promise<number> {
    const cutoff = isoFromMs(this.#clock.nowMs() - this.#retentionDays * 86_400_000);
    let total = 0;
    for (;;) {
      const n = await deleteEventsBefore(this.#db, cutoff, purgeBatch);
      total += n;
      if (n < purgeBatch) return total;
    }
  }
}
