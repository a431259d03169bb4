// Wire shapes of the admin API's partner routes: the partner as the operator sees it, and the
// bodies that provision and change it. One definition for validation, serialisation and the
// types the operator's CLI reads (packages/cli/src/operator/admin-client.ts).

import { type Static, Type } from "typebox";
import { limits } from "../../config/limits.ts";
import { ReasonText } from "../../platform/wire-schemas.ts";

/** One class's budget as the operator sees it: requests per minute, and whether it is the default. */
const RateBudget = Type.Object({ per_minute: Type.Integer(), default: Type.Boolean() });

export const AdminPartnerSchema = Type.Object(
  {
    id: Type.String(),
    name: Type.String(),
    active: Type.Boolean(),
    has_public_key: Type.Boolean(),
    /** The newest active key; all of them are under /admin/partners/:id/keys. */
    public_key_pem: Type.Union([Type.String(), Type.Null()]),
    allowed_ips: Type.Array(Type.String()),
    /** The budgets its signed requests draw on (docs/decisions.md, "Rate limits"). */
    rate_limits: Type.Object({ reads: RateBudget, writes: RateBudget, quotes: RateBudget }),
    created_at: Type.String(),
    updated_at: Type.String(),
  },
  { $id: "AdminPartner" },
);

/** `GET /admin/partners`: every partner, unpaginated (an operator has few). */
export const AdminPartnerListSchema = Type.Object({ items: Type.Array(AdminPartnerSchema) });

const PublicKeyPem = Type.String({ maxLength: 4096 });
const AllowedIps = Type.Array(Type.String({ maxLength: 64 }), { maxItems: 256 });

export const PartnerCreateBody = Type.Object(
  {
    name: Type.String({ minLength: 1, maxLength: 255 }),
    public_key_pem: Type.Union([PublicKeyPem, Type.Null()]),
    allowed_ips: AllowedIps,
  },
  { additionalProperties: false },
);

/** `PUT /admin/partners/:id/key`: replaces all the partner's keys by this one. */
export const PartnerKeyBody = Type.Object({ public_key_pem: PublicKeyPem }, { additionalProperties: false });

/** One of a partner's public keys; an active key has no `retired_at`. */
export const AdminPartnerKeySchema = Type.Object(
  {
    id: Type.String(),
    partner_id: Type.String(),
    label: Type.String(),
    public_key_pem: Type.String(),
    active: Type.Boolean(),
    created_at: Type.String(),
    retired_at: Type.Union([Type.String(), Type.Null()]),
  },
  { $id: "AdminPartnerKey" },
);

/** `GET /admin/partners/:id/keys`: every key of the partner, retired ones too, oldest first. */
export const AdminPartnerKeyListSchema = Type.Object({ items: Type.Array(AdminPartnerKeySchema) });

/** `POST /admin/partners/:id/keys`: one more active key (at most three at once). */
export const PartnerKeyAddBody = Type.Object(
  { label: Type.String({ minLength: 1, maxLength: 100 }), public_key_pem: PublicKeyPem },
  { additionalProperties: false },
);

export const PartnerIpsBody = Type.Object({ allowed_ips: AllowedIps }, { additionalProperties: false });

/** A budget set by the operator (requests per minute), or null for the default. */
const RateBudgetValue = Type.Union([
  Type.Integer({ minimum: 1, maximum: limits.rateLimitPerWindowMax }),
  Type.Null(),
]);

/**
 * `PUT /admin/partners/:id/limits`: the partner's own budgets per minute; null restores the
 * default; a class left out stays as it is.
 */
export const PartnerLimitsBody = Type.Object(
  {
    reads: Type.Optional(RateBudgetValue),
    writes: Type.Optional(RateBudgetValue),
    quotes: Type.Optional(RateBudgetValue),
  },
  { additionalProperties: false },
);

/** `PUT /admin/partners/:id/active`; a reason is required either way (the audit trail). */
export const PartnerActiveBody = Type.Object(
  { active: Type.Boolean(), reason: ReasonText },
  { additionalProperties: false },
);

export type PartnerView = Static<typeof AdminPartnerSchema>;
export type PartnerCreateBody = Static<typeof PartnerCreateBody>;
export type PartnerKeyBody = Static<typeof PartnerKeyBody>;
export type PartnerKeyView = Static<typeof AdminPartnerKeySchema>;
export type PartnerKeyAddBody = Static<typeof PartnerKeyAddBody>;
export type PartnerIpsBody = Static<typeof PartnerIpsBody>;
export type PartnerActiveBody = Static<typeof PartnerActiveBody>;
export type PartnerLimitsBody = Static<typeof PartnerLimitsBody>;
