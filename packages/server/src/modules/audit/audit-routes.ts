// GET /admin/audit: the audit trail, newest first, paged and filtered on the server (viewer role).

import type { FastifyInstance } from "fastify";
import { Type } from "typebox";
import { limits } from "../../config/limits.ts";
import { validationError } from "../../http/http-error.ts";
import { DatetimeQuery, datetimeParam, PageQuery } from "../../http/query-schemas.ts";
import { isUuid } from "../../platform/uuid.ts";
import type { AuditService } from "./audit-service.ts";
import { AuditPageSchema } from "./audit-views.ts";

const AuditQuery = Type.Object(
  {
    ...PageQuery,
    actor: Type.Optional(Type.String({ maxLength: 64 })),
    action: Type.Optional(Type.String({ maxLength: 64 })),
    target_type: Type.Optional(Type.String({ maxLength: 32 })),
    target_id: Type.Optional(Type.String({ maxLength: 300 })),
    from: Type.Optional(DatetimeQuery),
    to: Type.Optional(DatetimeQuery),
  },
  { additionalProperties: false },
);

interface AuditQuery {
  page?: number;
  page_size?: number;
  actor?: string;
  action?: string;
  target_type?: string;
  target_id?: string;
  from?: string;
  to?: string;
}

export function auditRoutes(app: FastifyInstance, { audit }: { readonly audit: AuditService }): void {
  app.get<{ Querystring: AuditQuery }>(
    "/admin/audit",
    { schema: { querystring: AuditQuery, response: { 200: AuditPageSchema } } },
    async (request) => {
      const q = request.query;
      if (q.actor !== undefined && q.actor !== "token" && q.actor !== "system" && !isUuid(q.actor)) {
        throw validationError([
          {
            loc: ["query", "actor"],
            msg: "Input should be an operator id, token or system",
            type: "value_error",
          },
        ]);
      }
      return audit.list(
        {
          actor: q.actor ?? null,
          action: q.action ?? null,
          targetType: q.target_type ?? null,
          targetId: q.target_id ?? null,
          from: datetimeParam("from", q.from),
          to: datetimeParam("to", q.to),
        },
        q.page ?? 1,
        q.page_size ?? limits.pageSizeDefault,
      );
    },
  );
}
