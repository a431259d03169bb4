// TypeBox building blocks of the wire shapes, shared by the views (the records as the partner API
// shows them) and the routes (their bodies and queries). Schemas only: nothing here knows HTTP.

import { type TSchema, type TUnsafe, Type } from "typebox";

/**
 * One of the given strings, as a union of literals (TypeBox's Union of Literal): Ajv reports a
 * wrong value as Pydantic's literal_error, and the document shows one enum (http/openapi.ts). Its
 * static type is the union of the strings, which `Type.Union(values.map(Type.Literal))` loses.
 */
export function literalUnion<T extends string>(values: readonly T[]): TUnsafe<T> {
  return Type.Unsafe<T>(Type.Union(values.map((v) => Type.Literal(v))));
}

/**
 * The envelope of every paginated list: the records of one page, and where that page stands.
 * Named (its $id), so the OpenAPI document has one component per list (OrderPage, ClientPage, …)
 * that operations refer to, and the SDK's generated types have one too.
 */
export function pageSchema<T extends TSchema>(name: string, item: T) {
  return Type.Object(
    { items: Type.Array(item), total: Type.Integer(), page: Type.Integer(), page_size: Type.Integer() },
    { $id: name },
  );
}

/**
 * The reason an operator gives for a change, kept on the audit trail: required (non-blank) for
 * status changes, deactivations and price pins, optional elsewhere.
 */
export const ReasonText = Type.Optional(Type.String({ maxLength: 1000 }));

/**
 * A partner's own name for a record it creates (`partner_client_id`, `partner_order_ref`):
 * 1–255 characters, and neither `.` nor `..`. Those two are dot segments, which every URL
 * normaliser removes, so the request target may not hold them as a path parameter (docs/reference.md
 * §5.2) and a record named by one could never be read, changed or found by its reference.
 * The pattern has no look-ahead, so that the fuzz test's generators can read it; it lets the
 * empty string through, which minLength already refuses with its own message.
 */
const partnerIdRules = {
  minLength: 1,
  maxLength: 255,
  pattern: "^(?:$|[^.]|\\.[^.]|\\.\\.[\\s\\S])",
  "x-error": {
    type: "string_pattern_mismatch",
    msg: "String should not be '.' or '..' (a path cannot name such an id)",
  },
};

export function partnerIdText(options: { description?: string } = {}) {
  return Type.String({ ...partnerIdRules, ...options });
}

/**
 * The same, or null. One schema with two types rather than a union: a refused string then gets
 * one 422 detail, not a second one from the null alternative.
 */
export function nullablePartnerIdText(options: { description?: string } = {}) {
  return Type.Unsafe<string | null>({ type: ["string", "null"], ...partnerIdRules, ...options });
}
