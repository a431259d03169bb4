// Webhook endpoints of the partner API (docs/reference.md, "Webhooks"), and the service's public
// keys, unsigned.

import type { FastifyInstance } from "fastify";
import { type Static, Type } from "typebox";
import { auditNote, reasonRequired } from "../../http/admin-access.ts";
import { HttpError, validationError } from "../../http/http-error.ts";
import { errorResponses } from "../../http/openapi.ts";
import { literalUnion } from "../../platform/wire-schemas.ts";
import { eventTypes } from "../events/index.ts";
import {
  AdminWebhookEndpointSchema,
  WebhookDeliverySchema,
  WebhookEnabledBody,
  WebhookEndpointSchema,
} from "./webhook-views.ts";
import type { WebhooksService } from "./webhooks-service.ts";

const CreateBody = Type.Object(
  {
    url: Type.String({ minLength: 1, maxLength: 2048 }),
    event_types: Type.Optional(
      Type.Array(literalUnion(eventTypes), { maxItems: 20, description: "Omitted or empty: every type." }),
    ),
  },
  { additionalProperties: false },
);
const Params = Type.Object({ endpoint_id: Type.String({ maxLength: 64 }) });
const DeliveriesQuery = Type.Object({
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, default: 20 })),
  before: Type.Optional(
    Type.Integer({
      minimum: 1,
      maximum: Number.MAX_SAFE_INTEGER,
      description: "A delivery id: the deliveries older than it.",
    }),
  ),
});
const RedeliverBody = Type.Object(
  { event_id: Type.String({ minLength: 1, maxLength: 64 }) },
  { additionalProperties: false },
);

const PublicKeySchema = Type.Object({
  key_id: Type.String(),
  algorithm: Type.Literal("ed25519"),
  public_key_pem: Type.String(),
});

export function webhooksRoutes(app: FastifyInstance, webhooks: WebhooksService): void {
  app.get(
    "/v1/public/webhook-keys",
    {
      schema: {
        tags: ["public"],
        operationId: "listWebhookKeys",
        summary: "The public keys webhooks are signed with",
        description: "Unsigned. A webhook's X-Key-ID names the key that signed it.",
        response: { 200: Type.Object({ items: Type.Array(PublicKeySchema) }) },
      },
    },
    async () => ({ items: webhooks.publicKeys() }),
  );

  app.post<{ Body: Static<typeof CreateBody> }>(
    "/v1/partner/webhook-endpoints",
    {
      schema: {
        tags: ["webhooks"],
        operationId: "createWebhookEndpoint",
        summary: "Register a webhook endpoint",
        description:
          "The endpoint receives the events created from now on, of the types asked for (all when none " +
          "are). https only outside the sandbox; private, loopback and link-local addresses are refused " +
          "unless the operator allows them.",
        body: CreateBody,
        response: { 201: Type.Object({ result: WebhookEndpointSchema }), ...errorResponses([]) },
      },
    },
    async (request, reply) => {
      const r = await webhooks.create(request.partnerId!, request.body.url, request.body.event_types ?? []);
      if (!r.ok) {
        const e = r.error;
        if (e === "too_many_endpoints")
          throw validationError([
            { loc: ["body", "url"], msg: "A partner has at most 16 webhook endpoints", type: "value_error" },
          ]);
        if (typeof e === "object")
          throw validationError([{ loc: ["body", "url"], msg: e.invalidUrl, type: "value_error" }]);
        throw new HttpError(e);
      }
      return reply.code(201).send({ result: r.endpoint });
    },
  );

  app.get(
    "/v1/partner/webhook-endpoints",
    {
      schema: {
        tags: ["webhooks"],
        operationId: "listWebhookEndpoints",
        summary: "List the partner's webhook endpoints",
        response: { 200: Type.Object({ items: Type.Array(WebhookEndpointSchema) }) },
      },
    },
    async (request) => ({ items: await webhooks.list(request.partnerId!) }),
  );

  app.get<{ Params: Static<typeof Params> }>(
    "/v1/partner/webhook-endpoints/:endpoint_id",
    {
      schema: {
        tags: ["webhooks"],
        operationId: "getWebhookEndpoint",
        summary: "Get a webhook endpoint",
        params: Params,
        response: { 200: Type.Object({ result: WebhookEndpointSchema }), ...errorResponses(["not_found"]) },
      },
    },
    async (request) => {
      const e = await webhooks.get(request.partnerId!, request.params.endpoint_id);
      if (e === null) throw new HttpError("not_found");
      return { result: e };
    },
  );

  app.delete<{ Params: Static<typeof Params> }>(
    "/v1/partner/webhook-endpoints/:endpoint_id",
    {
      schema: {
        tags: ["webhooks"],
        operationId: "deleteWebhookEndpoint",
        summary: "Delete a webhook endpoint and its delivery log",
        params: Params,
        response: { 204: { type: "null", description: "Deleted." }, ...errorResponses(["not_found"]) },
      },
    },
    async (request, reply) => {
      if (!(await webhooks.delete(request.partnerId!, request.params.endpoint_id)))
        throw new HttpError("not_found");
      return reply.code(204).send();
    },
  );

  app.get<{ Params: Static<typeof Params>; Querystring: Static<typeof DeliveriesQuery> }>(
    "/v1/partner/webhook-endpoints/:endpoint_id/deliveries",
    {
      schema: {
        tags: ["webhooks"],
        operationId: "listWebhookDeliveries",
        summary: "The endpoint's deliveries, newest first, with their attempts",
        params: Params,
        querystring: DeliveriesQuery,
        response: {
          200: Type.Object({ items: Type.Array(WebhookDeliverySchema) }),
          ...errorResponses(["not_found"]),
        },
      },
    },
    async (request) => {
      const items = await webhooks.deliveries(
        request.partnerId!,
        request.params.endpoint_id,
        request.query.limit ?? 20,
        request.query.before ?? null,
      );
      if (items === null) throw new HttpError("not_found");
      return { items };
    },
  );

  app.post<{ Params: Static<typeof Params> }>(
    "/v1/partner/webhook-endpoints/:endpoint_id/test",
    {
      schema: {
        tags: ["webhooks"],
        operationId: "sendWebhookTest",
        summary: "Send a webhook.test event to the endpoint",
        params: Params,
        response: { 202: Type.Object({ result: WebhookDeliverySchema }), ...errorResponses(["not_found"]) },
      },
    },
    async (request, reply) => {
      const d = await webhooks.sendTest(request.partnerId!, request.params.endpoint_id);
      if (d === null) throw new HttpError("not_found");
      return reply.code(202).send({ result: d });
    },
  );

  app.post<{ Params: Static<typeof Params>; Body: Static<typeof RedeliverBody> }>(
    "/v1/partner/webhook-endpoints/:endpoint_id/redeliver",
    {
      schema: {
        tags: ["webhooks"],
        operationId: "redeliverWebhook",
        summary: "Send an event to the endpoint again, now",
        description: "404 when the endpoint has no delivery of that event.",
        params: Params,
        body: RedeliverBody,
        response: { 202: Type.Object({ result: WebhookDeliverySchema }), ...errorResponses(["not_found"]) },
      },
    },
    async (request, reply) => {
      const d = await webhooks.redeliver(
        request.partnerId!,
        request.params.endpoint_id,
        request.body.event_id,
      );
      if (d === null) throw new HttpError("not_found");
      return reply.code(202).send({ result: d });
    },
  );
}

/** The operator's side: every endpoint (or one partner's), and disabling or enabling one. */
export function webhooksAdminRoutes(app: FastifyInstance, webhooks: WebhooksService): void {
  app.get<{ Querystring: { partner_id?: string } }>(
    "/admin/webhook-endpoints",
    {
      schema: {
        querystring: Type.Object({ partner_id: Type.Optional(Type.String({ maxLength: 64 })) }),
        response: { 200: Type.Object({ items: Type.Array(AdminWebhookEndpointSchema) }) },
      },
    },
    async (request) => ({ items: await webhooks.adminList(request.query.partner_id ?? null) }),
  );
  app.put<{ Params: Static<typeof Params>; Body: WebhookEnabledBody }>(
    "/admin/webhook-endpoints/:endpoint_id/enabled",
    {
      schema: {
        params: Params,
        body: WebhookEnabledBody,
        response: { 200: Type.Object({ result: WebhookEndpointSchema }) },
      },
    },
    async (request) => {
      const e = await webhooks.adminSetEnabled(
        request.params.endpoint_id,
        request.body.enabled,
        auditNote(request, request.body.reason),
      );
      if (e === "reason_required") throw reasonRequired();
      if (e === null) throw new HttpError("not_found");
      return { result: e };
    },
  );
}
