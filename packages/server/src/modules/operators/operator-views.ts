// Wire shapes of the operator accounts and the console's session: the account as the admin API
// shows it (never its password hash), and the bodies that create and change it.

import { type Static, Type } from "typebox";
import type { OperatorRole } from "../../db/schema.ts";
import { literalUnion, ReasonText } from "../../platform/wire-schemas.ts";
import type { OperatorRow } from "./operators-store.ts";

/** The roles, least to most (docs/decisions.md, "Operator accounts"): each may do what the ones before it may. */
export const operatorRoles: readonly OperatorRole[] = ["viewer", "compliance", "admin"];

/**
 * Who acts: a signed-in operator, a holder of the bearer admin token (acts as admin), or the
 * service itself (the sandbox's demo partner at start).
 */
export type Actor =
  | { kind: "operator"; id: string; email: string; role: OperatorRole }
  | { kind: "token"; role: "admin" }
  | { kind: "system"; role: "admin" };

export function roleAllows(have: OperatorRole, need: OperatorRole): boolean {
  return operatorRoles.indexOf(have) >= operatorRoles.indexOf(need);
}

export const OperatorSchema = Type.Object({
  id: Type.String(),
  email: Type.String(),
  role: literalUnion(operatorRoles),
  active: Type.Boolean(),
  has_password: Type.Boolean(),
  created_at: Type.String(),
  updated_at: Type.String(),
  last_sign_in_at: Type.Union([Type.String(), Type.Null()]),
});
export type OperatorView = Static<typeof OperatorSchema>;
export const OperatorListSchema = Type.Object({ items: Type.Array(OperatorSchema) });

export function operatorView(row: OperatorRow): OperatorView {
  return {
    id: row.id,
    email: row.email,
    role: row.role,
    active: row.active,
    has_password: row.password_hash !== null,
    created_at: row.created_at,
    updated_at: row.updated_at,
    last_sign_in_at: row.last_sign_in_at,
  };
}

const Password = Type.String({ minLength: 1, maxLength: 1024 });

export const OperatorCreateBody = Type.Object(
  {
    email: Type.String({ minLength: 1, maxLength: 254 }),
    role: literalUnion(operatorRoles),
    /** Omitted or null: the account signs in by one-time link only (the sandbox). */
    password: Type.Optional(Type.Union([Password, Type.Null()])),
  },
  { additionalProperties: false },
);
export type OperatorCreateBody = Static<typeof OperatorCreateBody>;

export const OperatorRoleBody = Type.Object(
  { role: literalUnion(operatorRoles) },
  { additionalProperties: false },
);
export type OperatorRoleBody = Static<typeof OperatorRoleBody>;
/** Disabling needs a reason. */
export const OperatorActiveBody = Type.Object(
  { active: Type.Boolean(), reason: ReasonText },
  { additionalProperties: false },
);
export type OperatorActiveBody = Static<typeof OperatorActiveBody>;
export const OperatorPasswordBody = Type.Object({ password: Password }, { additionalProperties: false });
export type OperatorPasswordBody = Static<typeof OperatorPasswordBody>;

export const SignInLinkSchema = Type.Object({
  token: Type.String(),
  url: Type.String(),
  expires_at: Type.String(),
});

export const SignInBody = Type.Object(
  { email: Type.String({ minLength: 1, maxLength: 254 }), password: Password },
  { additionalProperties: false },
);
export type SignInBody = Static<typeof SignInBody>;

/** The signed-in operator and the token its state-changing requests echo in X-CSRF-Token. */
export const SessionSchema = Type.Object({
  operator: OperatorSchema,
  csrf_token: Type.String(),
  idle_timeout_s: Type.Integer(),
});
