// The operator as compliance team (spec §3.1: statuses other than verified are set by the service's
// compliance team; DESIGN "Operator side"): show a partner's client, set its status, set its
// active flag. Bearer-authenticated by app.ts. An unknown partner or client is a 404, as in the
// rest of the admin API.

import type { FastifyInstance } from "fastify";
import { Type } from "typebox";
import type { ClientStatus } from "../../db/schema.ts";
import { HttpError } from "../../http/http-error.ts";
import type { Services } from "../../services.ts";
import { type ClientResult, ClientSchema, clientStatuses } from "../clients/index.ts";

const ClientParams = Type.Object({
  partner_id: Type.String({ maxLength: 64 }),
  partner_client_id: Type.String(),
});
const One = Type.Object({ result: ClientSchema });

interface Params {
  partner_id: string;
  partner_client_id: string;
}

function unwrap(result: ClientResult<"invalid_client">) {
  if (!result.ok) throw new HttpError("not_found");
  return { result: result.client };
}

export function adminClientsRoutes(app: FastifyInstance, services: Services): void {
  const { clients } = services;
  const path = "/admin/partners/:partner_id/clients/:partner_client_id";

  app.get<{ Params: Params }>(
    path,
    { schema: { params: ClientParams, response: { 200: One } } },
    async (request) =>
      unwrap(await clients.show(request.params.partner_id, request.params.partner_client_id)),
  );

  app.put<{ Params: Params; Body: { status: ClientStatus } }>(
    `${path}/status`,
    {
      schema: {
        params: ClientParams,
        body: Type.Object({ status: Type.Enum(clientStatuses) }, { additionalProperties: false }),
        response: { 200: One },
      },
    },
    async (request) =>
      unwrap(
        await clients.setStatus(
          request.params.partner_id,
          request.params.partner_client_id,
          request.body.status,
        ),
      ),
  );

  app.put<{ Params: Params; Body: { active: boolean } }>(
    `${path}/active`,
    {
      schema: {
        params: ClientParams,
        body: Type.Object({ active: Type.Boolean() }, { additionalProperties: false }),
        response: { 200: One },
      },
    },
    async (request) =>
      unwrap(
        await clients.setActive(
          request.params.partner_id,
          request.params.partner_client_id,
          request.body.active,
        ),
      ),
  );
}
