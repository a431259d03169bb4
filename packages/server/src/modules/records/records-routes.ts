// GET /admin/orders and GET /admin/orders/:order_id (viewer role): the orders across partners for
// scripts, filtered like the console's Orders page and paged by keyset on (created_at, id)
// (docs/decisions.md, "Back office records"), and one order with its ledger postings.

import { orderSources, orderStatuses, orderTypes } from "@counterpart/protocol";
import type { FastifyInstance } from "fastify";
import { Type } from "typebox";
import { limits } from "../../config/limits.ts";
import type { OrderSource, OrderStatus, OrderType } from "../../db/schema.ts";
import { HttpError, validationError } from "../../http/http-error.ts";
import { DatetimeQuery, datetimeParam } from "../../http/query-schemas.ts";
import { isUuid } from "../../platform/uuid.ts";
import { literalUnion } from "../../platform/wire-schemas.ts";
import type { RecordsService } from "./records-service.ts";
import { AdminOrderDetailSchema, AdminOrderPageSchema } from "./records-views.ts";

const OrdersQuery = Type.Object(
  {
    partner_id: Type.Optional(Type.String({ maxLength: 64 })),
    partner_client_id: Type.Optional(Type.String({ minLength: 1, maxLength: 255 })),
    type: Type.Optional(literalUnion(orderTypes)),
    source: Type.Optional(literalUnion(orderSources)),
    status: Type.Optional(literalUnion(orderStatuses)),
    from: Type.Optional(DatetimeQuery),
    to: Type.Optional(DatetimeQuery),
    after_at: Type.Optional(DatetimeQuery),
    after_id: Type.Optional(Type.Integer({ minimum: 1 })),
    page_size: Type.Optional(
      Type.Integer({ minimum: 1, maximum: limits.pageSizeMax, default: limits.pageSizeDefault }),
    ),
  },
  { additionalProperties: false },
);

interface OrdersQuery {
  partner_id?: string;
  partner_client_id?: string;
  type?: OrderType;
  source?: OrderSource;
  status?: OrderStatus;
  from?: string;
  to?: string;
  after_at?: string;
  after_id?: number;
  page_size?: number;
}

export function recordsRoutes(app: FastifyInstance, { records }: { readonly records: RecordsService }): void {
  app.get<{ Querystring: OrdersQuery }>(
    "/admin/orders",
    { schema: { querystring: OrdersQuery, response: { 200: AdminOrderPageSchema } } },
    async (request) => {
      const q = request.query;
      if (q.partner_id !== undefined && !isUuid(q.partner_id)) {
        throw validationError([
          {
            loc: ["query", "partner_id"],
            msg: "Input should be a partner id (a UUID)",
            type: "uuid_parsing",
          },
        ]);
      }
      if (q.partner_client_id !== undefined && q.partner_id === undefined) {
        throw validationError([
          { loc: ["query", "partner_id"], msg: "partner_client_id needs its partner_id", type: "missing" },
        ]);
      }
      if ((q.after_at === undefined) !== (q.after_id === undefined)) {
        throw validationError([
          { loc: ["query", "after_id"], msg: "after_at and after_id go together", type: "missing" },
        ]);
      }
      const afterAt = datetimeParam("after_at", q.after_at);
      let clientId: number | null = null;
      if (q.partner_client_id !== undefined) {
        clientId = await records.clientId(q.partner_id!, q.partner_client_id);
        if (clientId === null) return { items: [], next: null };
      }
      const page = await records.orders(
        {
          partnerId: q.partner_id ?? null,
          clientId,
          type: q.type ?? null,
          source: q.source ?? null,
          status: q.status ?? null,
          from: datetimeParam("from", q.from),
          to: datetimeParam("to", q.to),
        },
        afterAt === null ? null : { at: afterAt, id: q.after_id! },
        q.page_size ?? limits.pageSizeDefault,
      );
      return {
        items: page.items,
        next: page.next === null ? null : { after_at: page.next.at, after_id: page.next.id },
      };
    },
  );

  app.get<{ Params: { order_id: number } }>(
    "/admin/orders/:order_id",
    {
      schema: {
        params: Type.Object({ order_id: Type.Integer({ minimum: 1 }) }),
        response: { 200: AdminOrderDetailSchema },
      },
    },
    async (request) => {
      const found = await records.order(request.params.order_id);
      if (found === null) throw new HttpError("not_found");
      return { result: found };
    },
  );
}
