// Test data: a valid client payload as a partner would send it, and a client row inserted
// directly (for tests of other modules that only need a client to exist in some state).

import type { Db } from "../db/database.ts";
import type { ClientStatus } from "../db/schema.ts";

/** A valid POST /v1/partner/clients body; `n` makes the unique fields unique. */
export function clientPayload(n: number, overrides: Record<string, unknown> = {}): Record<string, unknown> {
  const digits = String(n).padStart(7, "0");
  return {
    partner_client_id: `client-${n}`,
    account_type: "personal",
    name: `Client Number ${n}`,
    birth_date: "1990-05-17",
    email: `client${n}@example.com`,
    phone: `+97150${digits}`,
    residency_id: "ae",
    citizenship_id: "ae",
    place_of_birth_id: "ae",
    national_number: null,
    government_id_number: `784-1990-${digits}-1`,
    government_id_doe: "2030-01-31",
    address: { street: "1 Sheikh Zayed Rd", city: "Dubai", postal_code: "00000", unit: "Apt 12" },
    employment: {
      status: "employed",
      company: "Acme",
      job_industry: "information_technology_telco",
      job_level: "senior",
      job_title: "Engineer",
    },
    trading_volume: "1000_10000",
    account_purpose: ["long_term_investment"],
    ...overrides,
  };
}

export async function insertClient(
  db: Db,
  partnerId: string,
  n: number,
  state: { status?: ClientStatus; active?: boolean } = {},
): Promise<{ id: number; partnerClientId: string }> {
  const p = clientPayload(n);
  const row = await db
    .insertInto("clients")
    .values({
      partner_id: partnerId,
      partner_client_id: String(p.partner_client_id),
      account_type: "personal",
      name: String(p.name),
      birth_date: String(p.birth_date),
      status: state.status ?? "verified",
      active: state.active ?? true,
      email: String(p.email),
      phone: String(p.phone),
      residency_id: "ae",
      citizenship_id: "ae",
      place_of_birth_id: "ae",
      national_number: null,
      government_id_number: String(p.government_id_number),
      government_id_doe: String(p.government_id_doe),
      residency_visa_number: null,
      residency_visa_doe: null,
      address: JSON.stringify(p.address),
      employment: JSON.stringify(p.employment),
      trading_volume: String(p.trading_volume),
      account_purpose: p.account_purpose as string[],
    })
    .returning(["id", "partner_client_id"])
    .executeTakeFirstOrThrow();
  return { id: row.id, partnerClientId: row.partner_client_id };
}
