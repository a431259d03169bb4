// The operator's admin API (DESIGN "Operator side"): the one way to change operator state while
// the service runs. Bearer-authenticated by app.ts; failures use the partner API's error shape.

import type { FastifyInstance } from "fastify";
import { Type } from "typebox";
import { HttpError, validationError } from "../../http/http-error.ts";
import type { Services } from "../../services.ts";
import type { PartnerResult } from "../partners/index.ts";

const keyReasons: Record<"not_pem" | "not_ed25519" | "small_order", string> = {
  not_pem: "the public key is not a PEM SubjectPublicKeyInfo block",
  not_ed25519: "the public key is not an Ed25519 key",
  small_order: "the public key is a small-order Ed25519 point and is refused",
};

function unwrap(result: PartnerResult) {
  if (result.ok) return { result: result.partner };
  switch (result.error) {
    case "partner_not_found":
      throw new HttpError("not_found");
    case "invalid_public_key":
      throw validationError([
        {
          loc: ["body", "public_key_pem"],
          msg: keyReasons[result.reason],
          type: `public_key_${result.reason}`,
        },
      ]);
    case "invalid_cidr":
      throw validationError([
        {
          loc: ["body", "allowed_ips"],
          msg: `"${result.value}" is not an IP address or CIDR range`,
          type: "cidr_parsing",
        },
      ]);
    case "invalid_name":
      throw validationError([
        { loc: ["body", "name"], msg: "Name should have 1 to 255 characters", type: "string_too_long" },
      ]);
  }
}

const PartnerIdParams = Type.Object({ partner_id: Type.String({ maxLength: 64 }) });
const CreateBody = Type.Object(
  {
    name: Type.String({ minLength: 1, maxLength: 255 }),
    public_key_pem: Type.Union([Type.String({ maxLength: 4096 }), Type.Null()]),
    allowed_ips: Type.Array(Type.String({ maxLength: 64 }), { maxItems: 256 }),
  },
  { additionalProperties: false },
);

export function adminRoutes(app: FastifyInstance, services: Services): void {
  const { partners } = services;

  app.post<{ Body: { name: string; public_key_pem: string | null; allowed_ips: string[] } }>(
    "/admin/partners",
    { schema: { body: CreateBody } },
    async (request, reply) => {
      const body = request.body;
      const out = unwrap(
        await partners.create({
          name: body.name,
          publicKeyPem: body.public_key_pem,
          allowIps: body.allowed_ips,
        }),
      );
      return reply.code(201).send(out);
    },
  );

  app.get("/admin/partners", async () => ({ items: await partners.list() }));

  app.get<{ Params: { partner_id: string } }>(
    "/admin/partners/:partner_id",
    { schema: { params: PartnerIdParams } },
    async (request) => unwrap(await partners.show(request.params.partner_id)),
  );

  app.put<{ Params: { partner_id: string }; Body: { public_key_pem: string } }>(
    "/admin/partners/:partner_id/key",
    {
      schema: {
        params: PartnerIdParams,
        body: Type.Object(
          { public_key_pem: Type.String({ maxLength: 4096 }) },
          { additionalProperties: false },
        ),
      },
    },
    async (request) => unwrap(await partners.setKey(request.params.partner_id, request.body.public_key_pem)),
  );

  app.put<{ Params: { partner_id: string }; Body: { allowed_ips: string[] } }>(
    "/admin/partners/:partner_id/ips",
    {
      schema: {
        params: PartnerIdParams,
        body: Type.Object(
          { allowed_ips: Type.Array(Type.String({ maxLength: 64 }), { maxItems: 256 }) },
          { additionalProperties: false },
        ),
      },
    },
    async (request) => unwrap(await partners.setIps(request.params.partner_id, request.body.allowed_ips)),
  );

  app.put<{ Params: { partner_id: string }; Body: { active: boolean } }>(
    "/admin/partners/:partner_id/active",
    {
      schema: {
        params: PartnerIdParams,
        body: Type.Object({ active: Type.Boolean() }, { additionalProperties: false }),
      },
    },
    async (request) => unwrap(await partners.setActive(request.params.partner_id, request.body.active)),
  );
}
