// GET /v1/partner/orders/{id}, /orders/ref/{ref} and /orders (docs/reference.md §4.5).

import type { FastifyInstance } from "fastify";
import { type Static, Type } from "typebox";
import { limits } from "../../config/limits.ts";
import { HttpError } from "../../http/http-error.ts";
import { errorResponses } from "../../http/openapi.ts";
import { DatetimeQuery, datetimeParam, PageQuery } from "../../http/query-schemas.ts";
import { credentialWitness } from "../../http/signature-auth.ts";
import { literalUnion } from "../../platform/wire-schemas.ts";
import { OrderPageSchema, OrderSchema, orderSources, orderStatuses } from "./order-views.ts";
import type { OrdersService } from "./orders-service.ts";

const ListQuery = Type.Object({
  partner_client_id: Type.Optional(Type.String({ minLength: 1, maxLength: 255 })),
  source: Type.Optional(Type.Array(literalUnion(orderSources), { maxItems: 20 })),
  status: Type.Optional(Type.Array(literalUnion(orderStatuses), { maxItems: 20 })),
  from_datetime: Type.Optional(DatetimeQuery),
  to_datetime: Type.Optional(DatetimeQuery),
  ...PageQuery,
});

type ListQueryType = Static<typeof ListQuery>;

export function ordersRoutes(app: FastifyInstance, orders: OrdersService): void {
  app.get<{ Params: { order_id: string } }>(
    "/v1/partner/orders/:order_id",
    {
      config: { witnessesCredentials: true },
      schema: {
        tags: ["orders"],
        operationId: "getOrder",
        summary: "Get an order by its id",
        description: "404 when the order does not exist or is another partner's.",
        params: Type.Object({ order_id: Type.String({ maxLength: 64 }) }),
        response: { 200: Type.Object({ result: OrderSchema }), ...errorResponses(["not_found"]) },
      },
    },
    async (request) => {
      // Any id that is not a positive integer names no order: 404, like an absent one.
      const raw = request.params.order_id;
      const id = /^[1-9][0-9]{0,15}$/.test(raw) ? Number(raw) : null;
      const order =
        id !== null && Number.isSafeInteger(id)
          ? await orders.get(request.partnerId!, id, credentialWitness(request))
          : null;
      if (order === null) throw new HttpError("not_found");
      return { result: order };
    },
  );

  app.get<{ Params: { partner_order_ref: string } }>(
    "/v1/partner/orders/ref/:partner_order_ref",
    {
      config: { witnessesCredentials: true },
      schema: {
        tags: ["orders"],
        operationId: "getOrderByRef",
        summary: "Get an order by its partner_order_ref",
        description: "404 when no order of the partner has this reference.",
        params: Type.Object({ partner_order_ref: Type.String({ maxLength: 1024 }) }),
        response: { 200: Type.Object({ result: OrderSchema }), ...errorResponses(["not_found"]) },
      },
    },
    async (request) => {
      const order = await orders.getByRef(
        request.partnerId!,
        request.params.partner_order_ref,
        credentialWitness(request),
      );
      if (order === null) throw new HttpError("not_found");
      return { result: order };
    },
  );

  app.get<{ Querystring: ListQueryType }>(
    "/v1/partner/orders",
    {
      config: { witnessesCredentials: true },
      schema: {
        tags: ["orders"],
        operationId: "listOrders",
        summary: "List the partner's orders",
        description:
          "Newest first. `source` and `status` are repeatable; `from_datetime` and `to_datetime` " +
          "bound created_at, inclusive (a datetime without an offset is UTC).",
        querystring: ListQuery,
        response: {
          200: OrderPageSchema,
          ...errorResponses(["invalid_client"]),
        },
      },
    },
    async (request) => {
      const q = request.query;
      const result = await orders.list(
        request.partnerId!,
        {
          partnerClientId: q.partner_client_id ?? null,
          sources: q.source ?? [],
          statuses: q.status ?? [],
          from: datetimeParam("from_datetime", q.from_datetime),
          to: datetimeParam("to_datetime", q.to_datetime),
          page: q.page ?? 1,
          pageSize: q.page_size ?? limits.pageSizeDefault,
        },
        credentialWitness(request),
      );
      if (!result.ok) throw new HttpError(result.error);
      const { ok: _ok, ...body } = result;
      return body;
    },
  );
}
