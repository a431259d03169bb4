// What a client body must look like (docs/reference.md §2.1, §8; docs/decisions.md "Clients and
// documents"). Two stages, as Pydantic would run them: the JSON Schemas below (types, lengths,
// formats, enums; checked by Ajv before the handler), then `checkClientFields`, the rules a schema
// cannot say well: a phone that libphonenumber accepts, the employment table, and, on update, the
// immutable fields. Both stages answer 422; nothing here touches the database.

import {
  type AccountPurpose,
  accountPurposes,
  type EmploymentStatus,
  employmentStatuses,
  type FieldError,
} from "@counterpart/protocol";
import { parsePhoneNumberFromString } from "libphonenumber-js/max";
import { type Static, Type } from "typebox";
import { limits } from "../../config/limits.ts";
import type { ClientAddress, ClientEmployment } from "../../db/schema.ts";
import { partnerIdText } from "../../platform/wire-schemas.ts";

export {
  accountPurposes,
  accountTypes,
  clientStatuses,
  type EmploymentStatus,
  employmentStatuses,
} from "@counterpart/protocol";

export const employmentFields = ["company", "job_industry", "job_level", "job_title"] as const;
type EmploymentField = (typeof employmentFields)[number];

/** docs/reference.md §2.1, the employment table, row for row, even where it looks odd. */
export const employmentRules: Record<
  EmploymentStatus,
  { required: readonly EmploymentField[]; disallowed: readonly EmploymentField[] }
> = {
  employed: { required: ["company", "job_industry", "job_level", "job_title"], disallowed: [] },
  self_employed: { required: ["company", "job_industry", "job_title"], disallowed: ["job_level"] },
  unemployed: { required: ["company", "job_industry", "job_level", "job_title"], disallowed: [] },
  housewife: { required: ["company", "job_industry", "job_level", "job_title"], disallowed: [] },
  retired: { required: ["company", "job_industry", "job_level", "job_title"], disallowed: [] },
};

/** The fields the update payload must not carry (docs/reference.md §2.1 rules 5 and 6). */
export const immutableOnUpdate = [
  "partner_client_id",
  "account_type",
  "birth_date",
  "place_of_birth_id",
] as const;

const text = (options: { minLength?: number; description?: string } = {}) =>
  Type.String({ maxLength: limits.stringLengthMax, ...options });
const nullableText = (options: { description?: string } = {}) =>
  Type.Unsafe<string | null>({ type: ["string", "null"], maxLength: limits.stringLengthMax, ...options });

// ajv-formats checks the calendar (no 30 February); year 0, which PostgreSQL lacks, is refused
// in the second stage.
const date = () => Type.String({ format: "date" });
const nullableDate = () => Type.Unsafe<string | null>({ type: ["string", "null"], format: "date" });
const dateFields = ["birth_date", "government_id_doe", "residency_visa_doe"] as const;

/** Lower-case two-letter ids; an id of that shape that the catalog does not support is a 2022-2024. */
const countryId = (options: { description?: string } = {}) =>
  Type.String({ pattern: "^[a-z]{2}$", ...options });

/** E.164 as sent: the second stage checks its form, then libphonenumber judges the number. */
const phone = () =>
  Type.String({
    maxLength: 32,
    description: 'International format with a leading plus (E.164), e.g. "+971501234567".',
  });
const e164Pattern = /^\+[1-9][0-9]{1,14}$/;

const Address = Type.Object({ street: text(), city: text(), postal_code: text(), unit: text() });

const Employment = Type.Object({
  status: Type.Enum(employmentStatuses),
  company: Type.Optional(nullableText()),
  job_industry: Type.Optional(nullableText()),
  job_level: Type.Optional(nullableText()),
  job_title: Type.Optional(nullableText()),
});

/** Fields common to create and update; unknown fields are ignored (docs/reference.md §2.1 rule 2). */
const mutable = {
  name: nullableText(),
  email: Type.String({ format: "email", maxLength: 320 }),
  phone: phone(),
  residency_id: countryId({ description: 'A country id from GET /v1/public/countries, e.g. "ae".' }),
  citizenship_id: countryId(),
  national_number: Type.Optional(nullableText()),
  government_id_number: text({ minLength: 1 }),
  government_id_doe: date(),
  residency_visa_number: Type.Optional(
    nullableText({
      description:
        "Required (with residency_visa_doe) when residency_id differs from citizenship_id; else 2025.",
    }),
  ),
  residency_visa_doe: Type.Optional(nullableDate()),
  address: Address,
  employment: Employment,
  trading_volume: text({ description: 'Any string; brackets such as "1000_10000" are recommended.' }),
  account_purpose: Type.Array(Type.Enum(accountPurposes), { minItems: 1, maxItems: 16 }),
};

export const ClientCreateBody = Type.Object({
  partner_client_id: partnerIdText(),
  account_type: Type.Literal("personal", {
    description: "Only personal accounts can be created through the interface.",
  }),
  birth_date: date(),
  place_of_birth_id: countryId(),
  ...mutable,
});
export type ClientCreateBody = Static<typeof ClientCreateBody>;

export const ClientUpdateBody = Type.Object(mutable);
export type ClientUpdateBody = Static<typeof ClientUpdateBody>;

export const ActivationBody = Type.Object({ active: Type.Boolean() });

/** The mutable fields of a client as the service stores them: phone in E.164, employment complete. */
export interface ClientFields {
  name: string | null;
  email: string;
  phone: string;
  residencyId: string;
  citizenshipId: string;
  nationalNumber: string | null;
  governmentIdNumber: string;
  governmentIdDoe: string;
  residencyVisaNumber: string | null;
  residencyVisaDoe: string | null;
  address: ClientAddress;
  employment: ClientEmployment;
  tradingVolume: string;
  accountPurpose: AccountPurpose[];
}

export type FieldsCheck = { ok: true; fields: ClientFields } | { ok: false; errors: FieldError[] };

const missing = (loc: (string | number)[]): FieldError => ({ loc, msg: "Field required", type: "missing" });
const extraForbidden = (loc: (string | number)[]): FieldError => ({
  loc,
  msg: "Extra inputs are not permitted",
  type: "extra_forbidden",
});

/** Errors of the employment table: a required field absent or null, a disallowed one given. */
export function employmentErrors(employment: ClientUpdateBody["employment"]): FieldError[] {
  const rules = employmentRules[employment.status];
  const errors: FieldError[] = [];
  for (const field of employmentFields) {
    const value = employment[field];
    const given = value !== undefined && value !== null;
    if (rules.required.includes(field) && !given) errors.push(missing(["body", "employment", field]));
    if (rules.disallowed.includes(field) && given) errors.push(extraForbidden(["body", "employment", field]));
  }
  return errors;
}

/** The phone in E.164 when sent in E.164 and libphonenumber holds it valid (full metadata), else null. */
export function e164(phoneText: string): string | null {
  if (!e164Pattern.test(phoneText)) return null;
  const parsed = parsePhoneNumberFromString(phoneText);
  return parsed?.isValid() ? parsed.number : null;
}

/** On update: the immutable fields, and partner_client_id, present in the body (any value). */
export function immutableFieldErrors(body: unknown): FieldError[] {
  if (body === null || typeof body !== "object") return [];
  return immutableOnUpdate.filter((f) => Object.hasOwn(body, f)).map((f) => extraForbidden(["body", f]));
}

/**
 * The second stage, after the schema passed: the rules a JSON Schema cannot state clearly. Returns
 * the fields as stored, or every field error found.
 */
export function checkClientFields(body: ClientUpdateBody & { birth_date?: string }): FieldsCheck {
  const errors: FieldError[] = [];
  for (const field of dateFields) {
    if (body[field]?.startsWith("0000")) {
      errors.push({
        loc: ["body", field],
        msg: "Input should be a valid date in the format YYYY-MM-DD",
        type: "date_from_datetime_parsing",
      });
    }
  }
  const normalised = e164(body.phone);
  if (normalised === null) {
    errors.push({ loc: ["body", "phone"], msg: "value is not a valid phone number", type: "value_error" });
  }
  errors.push(...employmentErrors(body.employment));
  if (errors.length > 0 || normalised === null) return { ok: false, errors };
  const rules = employmentRules[body.employment.status];
  const employment: ClientEmployment = { status: body.employment.status };
  for (const field of employmentFields) {
    employment[field] = rules.disallowed.includes(field) ? null : (body.employment[field] ?? null);
  }
  return {
    ok: true,
    fields: {
      name: body.name,
      email: body.email,
      phone: normalised,
      residencyId: body.residency_id,
      citizenshipId: body.citizenship_id,
      nationalNumber: body.national_number ?? null,
      governmentIdNumber: body.government_id_number,
      governmentIdDoe: body.government_id_doe,
      residencyVisaNumber: body.residency_visa_number ?? null,
      residencyVisaDoe: body.residency_visa_doe ?? null,
      address: {
        street: body.address.street,
        city: body.address.city,
        postal_code: body.address.postal_code,
        unit: body.address.unit,
      },
      employment,
      tradingVolume: body.trading_volume,
      // Repeats add nothing; the first occurrence keeps its place.
      accountPurpose: [...new Set(body.account_purpose)],
    },
  };
}
