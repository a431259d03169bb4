// The deliveries the service sends to a partner's webhook endpoint, as the OpenAPI document's
// `webhooks` (OpenAPI 3.1): every event type with its example (event-examples.ts), and the test
// event. docs/reference.md §6.3 states the same rules.

import { eventExamples, webhookTestExample } from "./event-examples.ts";
import { WebhookTestEventSchema } from "./event-views.ts";

const header = (name: string, description: string) => ({
  name,
  in: "header",
  required: true,
  description,
  schema: { type: "string" },
});

const headers = [
  header("X-Event-ID", "The event's id, the same at every attempt: deduplicate on it."),
  header("X-Key-ID", "The service key that signed the delivery (GET /v1/public/webhook-keys)."),
  header("X-Timestamp", "Unix milliseconds (13 digits) when the attempt was signed."),
  header(
    "X-Signature",
    "Base64 Ed25519 signature over X-Timestamp + POST + the endpoint's path and query + the " +
      "hex SHA-256 of the exact body (docs/reference.md §6.3).",
  ),
];

const responses = {
  "2XX": { description: "Delivered: any 2xx within 10 seconds." },
  default: {
    description:
      "Anything else (another status, a redirect, a timeout) is retried with exponential backoff " +
      "and jitter for 72 hours.",
  },
};

function delivery(
  operationId: string,
  summary: string,
  description: string,
  ref: string,
  examples: Record<string, unknown>,
) {
  return {
    post: {
      tags: ["webhooks"],
      operationId,
      summary,
      description,
      security: [],
      parameters: headers,
      requestBody: {
        required: true,
        content: {
          "application/json": {
            schema: { $ref: `#/components/schemas/${ref}` },
            examples: Object.fromEntries(Object.entries(examples).map(([k, value]) => [k, { value }])),
          },
        },
      },
      responses,
    },
  };
}

/** The `webhooks` and the schema they add, for registerOpenApi (http/openapi.ts). */
export function eventWebhooksOpenApi(): {
  webhooks: Record<string, unknown>;
  schemas: Record<string, unknown>;
} {
  const { $id: _id, ...testSchema } = WebhookTestEventSchema as unknown as Record<string, unknown>;
  return {
    webhooks: {
      event: delivery(
        "receiveEvent",
        "An event, delivered to an endpoint that wants its type",
        "The body is the event exactly as the feed shows it (GET /v1/partner/events); one example per type.",
        "Event",
        eventExamples,
      ),
      "webhook.test": delivery(
        "receiveTestEvent",
        "The test event (POST /v1/partner/webhook-endpoints/{endpoint_id}/test)",
        "Signed like every delivery; not in the feed.",
        "WebhookTestEvent",
        { "webhook.test": webhookTestExample },
      ),
    },
    schemas: { WebhookTestEvent: { ...testSchema, examples: [webhookTestExample] } },
  };
}
