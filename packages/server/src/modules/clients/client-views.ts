// The client as every client endpoint returns it (docs/reference.md §2.1), and its schema: one definition for
// serialisation and the OpenAPI document.

import type { Selectable } from "kysely";
import { type Static, Type } from "typebox";
import type { ClientsTable } from "../../db/schema.ts";
import { pageSchema } from "../../platform/wire-schemas.ts";
import { accountPurposes, accountTypes, clientStatuses, employmentStatuses } from "./clients-validation.ts";

export type ClientRow = Selectable<ClientsTable>;

const nullableString = () => Type.Union([Type.String(), Type.Null()]);

export const ClientSchema = Type.Object(
  {
    id: Type.Integer(),
    partner_client_id: Type.String(),
    account_type: Type.Enum(accountTypes),
    name: nullableString(),
    birth_date: Type.String({ format: "date" }),
    status: Type.Enum(clientStatuses),
    active: Type.Boolean(),
    email: Type.String(),
    phone: Type.String(),
    residency_id: Type.String(),
    citizenship_id: Type.String(),
    place_of_birth_id: Type.String(),
    national_number: nullableString(),
    government_id_number: Type.String(),
    government_id_doe: Type.String({ format: "date" }),
    residency_visa_number: nullableString(),
    residency_visa_doe: nullableString(),
    address: Type.Object({
      street: Type.String(),
      city: Type.String(),
      postal_code: Type.String(),
      unit: Type.String(),
    }),
    employment: Type.Object({
      status: Type.Enum(employmentStatuses),
      company: nullableString(),
      job_industry: nullableString(),
      job_level: nullableString(),
      job_title: nullableString(),
    }),
    trading_volume: Type.String(),
    account_purpose: Type.Array(Type.Enum(accountPurposes)),
    created_at: Type.String({ format: "date-time" }),
    verified_at: nullableString(),
  },
  { $id: "Client" },
);

export type ClientView = Static<typeof ClientSchema>;

export const ClientPageSchema = pageSchema("ClientPage", ClientSchema);
export type ClientPage = Static<typeof ClientPageSchema>;

export function clientView(row: ClientRow): ClientView {
  return {
    id: row.id,
    partner_client_id: row.partner_client_id,
    account_type: row.account_type,
    name: row.name,
    birth_date: row.birth_date,
    status: row.status,
    active: row.active,
    email: row.email,
    phone: row.phone,
    residency_id: row.residency_id,
    citizenship_id: row.citizenship_id,
    place_of_birth_id: row.place_of_birth_id,
    national_number: row.national_number,
    government_id_number: row.government_id_number,
    government_id_doe: row.government_id_doe,
    residency_visa_number: row.residency_visa_number,
    residency_visa_doe: row.residency_visa_doe,
    address: {
      street: row.address.street,
      city: row.address.city,
      postal_code: row.address.postal_code,
      unit: row.address.unit,
    },
    employment: {
      status: row.employment.status,
      company: row.employment.company ?? null,
      job_industry: row.employment.job_industry ?? null,
      job_level: row.employment.job_level ?? null,
      job_title: row.employment.job_title ?? null,
    },
    trading_volume: row.trading_volume,
    account_purpose: row.account_purpose,
    created_at: row.created_at,
    verified_at: row.verified_at,
  };
}
