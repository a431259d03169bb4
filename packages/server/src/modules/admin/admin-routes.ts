// The operator's admin API (docs/decisions.md "Operator side"): the one way to change operator state while
// the service runs. Bearer-authenticated by app.ts; failures use the partner API's error shape.

import type { FastifyInstance } from "fastify";
import { Type } from "typebox";
import { auditNote, reasonRequired } from "../../http/admin-access.ts";
import { HttpError, validationError } from "../../http/http-error.ts";
import {
  AdminPartnerKeyListSchema,
  AdminPartnerKeySchema,
  AdminPartnerListSchema,
  AdminPartnerSchema,
  PartnerActiveBody,
  PartnerCreateBody,
  type PartnerFailure,
  PartnerIpsBody,
  PartnerKeyAddBody,
  PartnerKeyBody,
  type PartnerKeyResult,
  type PartnerKeysResult,
  PartnerLimitsBody,
  type PartnerResult,
  type PartnersService,
} from "../partners/index.ts";

const keyReasons: Record<"not_pem" | "not_ed25519" | "small_order", string> = {
  not_pem: "the public key is not a PEM SubjectPublicKeyInfo block",
  not_ed25519: "the public key is not an Ed25519 key",
  small_order: "the public key is a small-order Ed25519 point and is refused",
};

function unwrap(result: PartnerResult) {
  if (result.ok) return { result: result.partner };
  throw refusal(result);
}

function unwrapKey(result: PartnerKeyResult) {
  if (result.ok) return { result: result.key };
  throw refusal(result);
}

function refusal(result: PartnerFailure): HttpError {
  switch (result.error) {
    case "partner_not_found":
    case "key_not_found":
      return new HttpError("not_found");
    case "invalid_label":
      return validationError([
        { loc: ["body", "label"], msg: "Label should have 1 to 100 characters", type: "string_too_long" },
      ]);
    case "too_many_keys":
      return validationError([
        {
          loc: ["body", "public_key_pem"],
          msg: `the partner already has ${result.max} active keys; retire one first`,
          type: "too_many_keys",
        },
      ]);
    case "key_already_active":
      return validationError([
        {
          loc: ["body", "public_key_pem"],
          msg: "the partner already has this key, active",
          type: "key_already_active",
        },
      ]);
    case "invalid_public_key":
      return validationError([
        {
          loc: ["body", "public_key_pem"],
          msg: keyReasons[result.reason],
          type: `public_key_${result.reason}`,
        },
      ]);
    case "invalid_cidr":
      return validationError([
        {
          loc: ["body", "allowed_ips"],
          msg: `"${result.value}" is not an IP address or CIDR range`,
          type: "cidr_parsing",
        },
      ]);
    case "reason_required":
      return reasonRequired();
    case "invalid_name":
      return validationError([
        { loc: ["body", "name"], msg: "Name should have 1 to 255 characters", type: "string_too_long" },
      ]);
  }
}

const PartnerIdParams = Type.Object({ partner_id: Type.String({ maxLength: 64 }) });
const PartnerKeyParams = Type.Object({
  partner_id: Type.String({ maxLength: 64 }),
  key_id: Type.String({ maxLength: 64 }),
});
const One = Type.Object({ result: AdminPartnerSchema });
const OneKey = Type.Object({ result: AdminPartnerKeySchema });

/** What the partner routes of the admin API use. */
export interface AdminPartnersDeps {
  readonly partners: PartnersService;
}

export function adminRoutes(app: FastifyInstance, { partners }: AdminPartnersDeps): void {
  app.post<{ Body: PartnerCreateBody }>(
    "/admin/partners",
    { schema: { body: PartnerCreateBody, response: { 201: One } } },
    async (request, reply) => {
      const body = request.body;
      const out = unwrap(
        await partners.create(
          {
            name: body.name,
            publicKeyPem: body.public_key_pem,
            allowIps: body.allowed_ips,
          },
          auditNote(request),
        ),
      );
      return reply.code(201).send(out);
    },
  );

  app.get("/admin/partners", { schema: { response: { 200: AdminPartnerListSchema } } }, async () => ({
    items: await partners.list(),
  }));

  app.get<{ Params: { partner_id: string } }>(
    "/admin/partners/:partner_id",
    { schema: { params: PartnerIdParams, response: { 200: One } } },
    async (request) => unwrap(await partners.show(request.params.partner_id)),
  );

  // Replaces all the partner's keys by this one (its active keys are retired at once). To rotate
  // without downtime use the keys routes below instead (docs/operations.md).
  app.put<{ Params: { partner_id: string }; Body: PartnerKeyBody }>(
    "/admin/partners/:partner_id/key",
    {
      schema: {
        params: PartnerIdParams,
        body: PartnerKeyBody,
        response: { 200: One },
      },
    },
    async (request) =>
      unwrap(
        await partners.setKey(request.params.partner_id, request.body.public_key_pem, auditNote(request)),
      ),
  );

  app.get<{ Params: { partner_id: string } }>(
    "/admin/partners/:partner_id/keys",
    { schema: { params: PartnerIdParams, response: { 200: AdminPartnerKeyListSchema } } },
    async (request) => {
      const result: PartnerKeysResult = await partners.listKeys(request.params.partner_id);
      if (!result.ok) throw refusal(result);
      return { items: result.keys };
    },
  );

  app.post<{ Params: { partner_id: string }; Body: PartnerKeyAddBody }>(
    "/admin/partners/:partner_id/keys",
    { schema: { params: PartnerIdParams, body: PartnerKeyAddBody, response: { 201: OneKey } } },
    async (request, reply) => {
      const { label, public_key_pem } = request.body;
      const out = unwrapKey(
        await partners.addKey(request.params.partner_id, label, public_key_pem, auditNote(request)),
      );
      return reply.code(201).send(out);
    },
  );

  app.delete<{ Params: { partner_id: string; key_id: string } }>(
    "/admin/partners/:partner_id/keys/:key_id",
    { schema: { params: PartnerKeyParams, response: { 200: OneKey } } },
    async (request) =>
      unwrapKey(
        await partners.retireKey(request.params.partner_id, request.params.key_id, auditNote(request)),
      ),
  );

  app.put<{ Params: { partner_id: string }; Body: PartnerIpsBody }>(
    "/admin/partners/:partner_id/ips",
    {
      schema: {
        params: PartnerIdParams,
        body: PartnerIpsBody,
        response: { 200: One },
      },
    },
    async (request) =>
      unwrap(await partners.setIps(request.params.partner_id, request.body.allowed_ips, auditNote(request))),
  );

  // The partner's rate-limit budgets (docs/decisions.md, "Rate limits").
  app.put<{ Params: { partner_id: string }; Body: PartnerLimitsBody }>(
    "/admin/partners/:partner_id/limits",
    { schema: { params: PartnerIdParams, body: PartnerLimitsBody, response: { 200: One } } },
    async (request) =>
      unwrap(await partners.setRateLimits(request.params.partner_id, request.body, auditNote(request))),
  );

  app.put<{ Params: { partner_id: string }; Body: PartnerActiveBody }>(
    "/admin/partners/:partner_id/active",
    {
      schema: {
        params: PartnerIdParams,
        body: PartnerActiveBody,
        response: { 200: One },
      },
    },
    async (request) =>
      unwrap(
        await partners.setActive(
          request.params.partner_id,
          request.body.active,
          auditNote(request, request.body.reason),
        ),
      ),
  );
}
