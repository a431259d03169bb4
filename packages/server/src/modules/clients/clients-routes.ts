// The partner's client endpoints (docs/reference.md §4.6). Client paths exist only as written: with their
// trailing slash (GET/PUT …/{id}/) and without one for /activation; any other form is a 404.

import type { FastifyInstance, FastifyRequest } from "fastify";
import { type Static, Type } from "typebox";
import { limits } from "../../config/limits.ts";
import { HttpError, validationError } from "../../http/http-error.ts";
import { errorResponses } from "../../http/openapi.ts";
import { datetimeParam, PageQuery } from "../../http/query-schemas.ts";
import { toFieldErrors } from "../../http/validation.ts";
import { ClientPageSchema, ClientSchema } from "./client-views.ts";
import type { ClientsService } from "./clients-service.ts";
import {
  ActivationBody,
  ClientCreateBody,
  ClientUpdateBody,
  checkClientFields,
  clientStatuses,
  immutableFieldErrors,
} from "./clients-validation.ts";

const ClientParams = Type.Object({ partner_client_id: Type.String() });
const One = Type.Object({ result: ClientSchema });

const ListQuery = Type.Object({
  status: Type.Optional(Type.Array(Type.Enum(clientStatuses), { maxItems: 20 })),
  // Checked by queryDatetime in the handler, so that every bad value gets the one datetime error.
  from_datetime: Type.Optional(Type.String({ maxLength: 64 })),
  to_datetime: Type.Optional(Type.String({ maxLength: 64 })),
  ...PageQuery,
});

type ListQueryType = Static<typeof ListQuery>;

/** The schema's errors, when the route validated with attachValidation; none otherwise. */
function schemaErrors(request: FastifyRequest) {
  const failure = request.validationError as
    | (Error & { validation?: Parameters<typeof toFieldErrors>[0]; validationContext?: string })
    | undefined;
  if (failure?.validation === undefined) return [];
  return toFieldErrors(failure.validation, failure.validationContext ?? "body");
}

export function clientsRoutes(app: FastifyInstance, clients: ClientsService): void {
  app.post<{ Body: ClientCreateBody }>(
    "/v1/partner/clients",
    {
      schema: {
        tags: ["clients"],
        operationId: "createClient",
        summary: "Onboard a client",
        description:
          "Creates a personal client, verified and active. Employment fields are required or " +
          "forbidden by employment.status; residency visa fields are required when " +
          "residency_id differs from citizenship_id (2025).",
        body: ClientCreateBody,
        response: {
          201: One,
          ...errorResponses([
            "duplicate_partner_client_id",
            "duplicate_email",
            "duplicate_phone",
            "government_id_taken",
            "client_under_age",
            "invalid_residency",
            "invalid_citizenship",
            "invalid_place_of_birth",
            "residency_visa_required",
          ]),
        },
      },
    },
    async (request, reply) => {
      const body = request.body;
      const checked = checkClientFields(body);
      if (!checked.ok) throw validationError(checked.errors);
      const result = await clients.create(request.partnerId!, {
        ...checked.fields,
        partnerClientId: body.partner_client_id,
        birthDate: body.birth_date,
        placeOfBirthId: body.place_of_birth_id,
      });
      if (!result.ok) throw new HttpError(result.error);
      return reply.code(201).send({ result: result.client });
    },
  );

  app.get<{ Querystring: ListQueryType }>(
    "/v1/partner/clients",
    {
      schema: {
        tags: ["clients"],
        operationId: "listClients",
        summary: "List the partner's clients",
        description:
          "Newest first. `status` is repeatable; `from_datetime` and `to_datetime` bound created_at, " +
          "inclusive (a datetime without an offset is UTC).",
        querystring: ListQuery,
        response: {
          200: ClientPageSchema,
        },
      },
    },
    async (request) => {
      const q = request.query;
      return clients.list(request.partnerId!, {
        statuses: q.status ?? [],
        from: datetimeParam("from_datetime", q.from_datetime),
        to: datetimeParam("to_datetime", q.to_datetime),
        page: q.page ?? 1,
        pageSize: q.page_size ?? limits.pageSizeDefault,
      });
    },
  );

  app.get<{ Params: { partner_client_id: string } }>(
    "/v1/partner/clients/:partner_client_id/",
    {
      schema: {
        tags: ["clients"],
        operationId: "getClient",
        summary: "Get a client",
        description: "The path ends with a slash; without it, 404.",
        params: ClientParams,
        response: { 200: One, ...errorResponses(["invalid_client"]) },
      },
    },
    async (request) => {
      const found = await clients.show(request.partnerId!, request.params.partner_client_id);
      if (!found.ok) throw new HttpError(found.error);
      return { result: found.client };
    },
  );

  app.put<{ Params: { partner_client_id: string }; Body: ClientUpdateBody }>(
    "/v1/partner/clients/:partner_client_id/",
    // Validation is attached rather than thrown, so that the immutable fields sent in the body are
    // reported in the same 422 as the schema's findings.
    {
      schema: {
        tags: ["clients"],
        operationId: "updateClient",
        summary: "Replace a client's details",
        description:
          "A full replacement, not a patch: every required field is sent again. account_type, " +
          "birth_date, place_of_birth_id and partner_client_id cannot change and are refused in " +
          "the body (422 extra_forbidden). The path ends with a slash.",
        params: ClientParams,
        body: ClientUpdateBody,
        response: {
          200: One,
          ...errorResponses([
            "invalid_client",
            "duplicate_email",
            "duplicate_phone",
            "government_id_taken",
            "invalid_residency",
            "invalid_citizenship",
            "residency_visa_required",
          ]),
        },
      },
      attachValidation: true,
    },
    async (request) => {
      const errors = [...schemaErrors(request), ...immutableFieldErrors(request.body)];
      if (errors.length > 0) throw validationError(errors);
      const checked = checkClientFields(request.body);
      if (!checked.ok) throw validationError(checked.errors);
      const result = await clients.update(
        request.partnerId!,
        request.params.partner_client_id,
        checked.fields,
      );
      if (!result.ok) throw new HttpError(result.error);
      return { result: result.client };
    },
  );

  app.put<{ Params: { partner_client_id: string }; Body: { active: boolean } }>(
    "/v1/partner/clients/:partner_client_id/activation",
    {
      schema: {
        tags: ["clients"],
        operationId: "setClientActivation",
        summary: "Activate or deactivate a client",
        description: "A deactivated client cannot be funded or trade (2010).",
        params: ClientParams,
        body: ActivationBody,
        response: {
          204: { type: "null", description: "Done; no body." },
          ...errorResponses(["invalid_client"]),
        },
      },
    },
    async (request, reply) => {
      const result = await clients.setActive(
        request.partnerId!,
        request.params.partner_client_id,
        request.body.active,
        null,
      );
      // Without an operator's note no reason is asked for: the only failure is 2008.
      if (!result.ok) throw new HttpError("invalid_client");
      return reply.code(204).send();
    },
  );
}
