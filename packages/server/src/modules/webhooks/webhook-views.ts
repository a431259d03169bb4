// Webhook endpoints and deliveries as the partner API shows them (docs/reference.md, "Webhooks").

import type { Selectable } from "kysely";
import { type Static, Type } from "typebox";
import type { WebhookAttemptsTable, WebhookDeliveriesTable, WebhookEndpointsTable } from "../../db/schema.ts";
import { literalUnion, ReasonText } from "../../platform/wire-schemas.ts";
import { eventTypes } from "../events/index.ts";

export const WebhookEndpointSchema = Type.Object(
  {
    id: Type.String({ format: "uuid" }),
    url: Type.String(),
    event_types: Type.Array(literalUnion(eventTypes), { description: "Empty: every type." }),
    status: literalUnion(["enabled", "failing", "disabled"] as const),
    created_at: Type.String(),
    updated_at: Type.String(),
  },
  { $id: "WebhookEndpoint" },
);
export type WebhookEndpointView = Static<typeof WebhookEndpointSchema>;

/** An endpoint as the admin API lists it: with its partner. */
export const AdminWebhookEndpointSchema = Type.Intersect([
  WebhookEndpointSchema,
  Type.Object({ partner_id: Type.String() }),
]);
export type AdminWebhookEndpointView = Static<typeof AdminWebhookEndpointSchema>;

/** `PUT /admin/webhook-endpoints/:id/enabled`; disabling needs a reason (it goes on the audit trail). */
export const WebhookEnabledBody = Type.Object(
  { enabled: Type.Boolean(), reason: ReasonText },
  { additionalProperties: false },
);
export type WebhookEnabledBody = Static<typeof WebhookEnabledBody>;

export const WebhookAttemptSchema = Type.Object({
  attempted_at: Type.String(),
  status_code: Type.Union([Type.Integer(), Type.Null()]),
  error: Type.Union([Type.String(), Type.Null()]),
  duration_ms: Type.Integer(),
});

export const WebhookDeliverySchema = Type.Object(
  {
    id: Type.Integer(),
    event_id: Type.String(),
    event_type: Type.String(),
    status: literalUnion(["pending", "delivered", "failed"] as const),
    attempts: Type.Integer(),
    next_attempt_at: Type.Union([Type.String(), Type.Null()]),
    last_status_code: Type.Union([Type.Integer(), Type.Null()]),
    last_error: Type.Union([Type.String(), Type.Null()]),
    created_at: Type.String(),
    delivered_at: Type.Union([Type.String(), Type.Null()]),
    attempt_log: Type.Array(WebhookAttemptSchema, { description: "The latest attempts, oldest first." }),
  },
  { $id: "WebhookDelivery" },
);
export type WebhookDeliveryView = Static<typeof WebhookDeliverySchema>;

export type EndpointRow = Selectable<WebhookEndpointsTable>;
export type DeliveryRow = Selectable<WebhookDeliveriesTable>;
export type AttemptRow = Selectable<WebhookAttemptsTable>;

export function endpointView(r: EndpointRow): WebhookEndpointView {
  return {
    id: r.id,
    url: r.url,
    event_types: r.event_types as WebhookEndpointView["event_types"],
    status: r.status,
    created_at: r.created_at,
    updated_at: r.updated_at,
  };
}

export function deliveryView(r: DeliveryRow, attempts: readonly AttemptRow[]): WebhookDeliveryView {
  return {
    id: r.id,
    event_id: r.event_id,
    event_type: r.event_type,
    status: r.status,
    attempts: r.attempts,
    next_attempt_at: r.status === "pending" ? r.next_attempt_at : null,
    last_status_code: r.last_status_code,
    last_error: r.last_error,
    created_at: r.created_at,
    delivered_at: r.delivered_at,
    attempt_log: attempts.map((a) => ({
      attempted_at: a.attempted_at,
      status_code: a.status_code,
      error: a.error,
      duration_ms: a.duration_ms,
    })),
  };
}
