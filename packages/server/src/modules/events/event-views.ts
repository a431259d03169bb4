// The event as the feed and the webhooks show it (docs/reference.md, "Events"): its id, which is
// also its position in the feed, its type, when the change happened, the client it concerns, and
// the resource as the partner API shows it.

import { type Static, Type } from "typebox";
import { literalUnion } from "../../platform/wire-schemas.ts";
import { ClientSchema } from "../clients/index.ts";
import { DocumentSchema } from "../documents/index.ts";
import { OrderSchema } from "../orders/index.ts";
import { eventExamples } from "./event-examples.ts";

export const eventTypes = [
  "order.completed",
  "order.rejected",
  "client.created",
  "client.updated",
  "client.status_changed",
  "client.activation_changed",
  "document.created",
] as const;
export type EventType = (typeof eventTypes)[number];

export const EventSchema = Type.Object(
  {
    id: Type.String({
      description: "Unique and stable: deduplicate on it. Also the event's position: pass it as `after`.",
    }),
    type: literalUnion(eventTypes),
    created_at: Type.String({ description: "When the change happened." }),
    partner_client_id: Type.String(),
    data: Type.Union([OrderSchema, ClientSchema, DocumentSchema], {
      description:
        "The resource as the partner API shows it: an Order for order.*, a Client for client.*, a " +
        "Document for document.created.",
    }),
  },
  // One example per type (event-examples.ts), shown by the OpenAPI document.
  { $id: "Event", examples: Object.values(eventExamples) },
);
export type EventView = Static<typeof EventSchema>;

/** What `POST /v1/partner/webhook-endpoints/{id}/test` sends: not in the feed, no client. */
export const WebhookTestEventSchema = Type.Object(
  {
    id: Type.String({ description: "evt_test_ + 16 characters; not a position in the feed." }),
    type: Type.Literal("webhook.test"),
    created_at: Type.String(),
    partner_client_id: Type.Null(),
    data: Type.Object({ endpoint_id: Type.String({ format: "uuid" }) }),
  },
  { $id: "WebhookTestEvent" },
);
export type WebhookTestEventView = Static<typeof WebhookTestEventSchema>;

export const EventFeedSchema = Type.Object(
  {
    items: Type.Array(EventSchema),
    next_cursor: Type.Union([Type.String(), Type.Null()], {
      description:
        "Pass as `after` to read on: the id of the last event returned, or the `after` given when " +
        "none was (null when neither).",
    }),
    has_more: Type.Boolean({ description: "Whether more events were ready when this page was read." }),
  },
  { $id: "EventFeed" },
);
export type EventFeed = Static<typeof EventFeedSchema>;

/** An event's place in the feed: the writing transaction's id (xid8), then its sequence number. */
export interface EventPosition {
  txid: bigint;
  seq: bigint;
}

const idPrefix = "evt_";
const positionMax = 2n ** 63n - 1n;
const idPattern = /^evt_[A-Za-z0-9_-]{22}$/;

/** The event's public id: its position, 16 bytes in base64url. Opaque to partners. */
export function eventId(p: EventPosition): string {
  const b = Buffer.alloc(16);
  b.writeBigUInt64BE(p.txid, 0);
  b.writeBigUInt64BE(p.seq, 8);
  return idPrefix + b.toString("base64url");
}

/** The position an event id stands for, or null for text that is not an event id. */
export function eventPosition(id: string): EventPosition | null {
  if (!idPattern.test(id)) return null;
  const b = Buffer.from(id.slice(idPrefix.length), "base64url");
  if (b.length !== 16) return null;
  const p = { txid: b.readBigUInt64BE(0), seq: b.readBigUInt64BE(8) };
  // Both are stored as PostgreSQL's bigint (a transaction id never comes near 2^63): beyond it
  // the text names no event, and must not reach a statement.
  if (p.txid > positionMax || p.seq > positionMax) return null;
  // Only the canonical spelling (base64url has a few spellings of the last character's bits).
  return eventId(p) === id ? p : null;
}
