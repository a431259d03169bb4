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
