// The operator as compliance team (docs/reference.md §3.1: statuses other than verified are set by the service's
// compliance team; docs/decisions.md "Operator side"): show a partner's client, set its status, set its
// active flag. Bearer-authenticated by app.ts. An unknown partner or client is a 404, as in the
// rest of the admin API.

import type { FastifyInstance } from "fastify";
import { Type } from "typebox";
import type { ClientStatus } from "../../db/schema.ts";
import { auditNote, reasonRequired } from "../../http/admin-access.ts";
import { HttpError } from "../../http/http-error.ts";
import { ReasonText } from "../../platform/wire-schemas.ts";
import { type ClientResult, ClientSchema, type ClientsService, clientStatuses } from "../clients/index.ts";

const ClientParams = Type.Object({
  partner_id: Type.String({ maxLength: 64 }),
  partner_client_id: Type.String(),
});
const One = Type.Object({ result: ClientSchema });

interface Params {
  partner_id: string;
  partner_client_id: string;
}

function unwrap(result: ClientResult<"invalid_client" | "reason_required">) {
  if (!result.ok) throw result.error === "reason_required" ? reasonRequired() : new HttpError("not_found");
  return { result: result.client };
}

/** What the client routes of the admin API use. */
export interface AdminClientsDeps {
  readonly clients: ClientsService;
}

export function adminClientsRoutes(app: FastifyInstance, { clients }: AdminClientsDeps): void {
  const path = "/admin/partners/:partner_id/clients/:partner_client_id";

  app.get<{ Params: Params }>(
    path,
    { schema: { params: ClientParams, response: { 200: One } } },
    async (request) =>
      unwrap(await clients.show(request.params.partner_id, request.params.partner_client_id)),
  );

  // A status change needs a reason, and so does blocking or unblocking, whoever calls (bearer token
  // included). Both go on the audit trail.
  app.put<{ Params: Params; Body: { status: ClientStatus; reason?: string } }>(
    `${path}/status`,
    {
      schema: {
        params: ClientParams,
        body: Type.Object(
          { status: Type.Enum(clientStatuses), reason: ReasonText },
          { additionalProperties: false },
        ),
        response: { 200: One },
      },
    },
    async (request) =>
      unwrap(
        await clients.setStatus(
          request.params.partner_id,
          request.params.partner_client_id,
          request.body.status,
          auditNote(request, request.body.reason),
        ),
      ),
  );

  app.put<{ Params: Params; Body: { active: boolean; reason?: string } }>(
    `${path}/active`,
    {
      schema: {
        params: ClientParams,
        body: Type.Object({ active: Type.Boolean(), reason: ReasonText }, { additionalProperties: false }),
        response: { 200: One },
      },
    },
    async (request) =>
      unwrap(
        await clients.setActive(
          request.params.partner_id,
          request.params.partner_client_id,
          request.body.active,
          auditNote(request, request.body.reason),
        ),
      ),
  );
}
