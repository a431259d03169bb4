// Client use cases (spec §2.1, §3.1, §3.2, §4.6): onboarding, reading, full-replacement update,
// the active flag, the list; and the operator's compliance actions (status, active). Expected
// failures are returned as values named after the error catalog; routes map them to HTTP.

import type { Db } from "../../db/database.ts";
import type { ClientStatus } from "../../db/schema.ts";
import { isoFromMs } from "../../db/time.ts";
import { pgConstraint, pgErrorCode } from "../../db/transaction.ts";
import type { Clock } from "../../platform/clock.ts";
import { type ClientRow, type ClientView, clientView } from "./client-views.ts";
import {
  type Conflicts,
  findClient,
  findConflicts,
  insertClient,
  listClients,
  supportedCountries,
  updateClient,
} from "./clients-store.ts";
import type { ClientFields } from "./clients-validation.ts";

export interface ClientCreateInput extends ClientFields {
  partnerClientId: string;
  birthDate: string;
  placeOfBirthId: string;
}

type DuplicateError =
  | "duplicate_partner_client_id"
  | "duplicate_email"
  | "duplicate_phone"
  | "government_id_taken";
type CountryError = "invalid_residency" | "invalid_citizenship" | "invalid_place_of_birth";

export type CreateError = DuplicateError | "client_under_age" | CountryError | "residency_visa_required";
export type UpdateError =
  | "invalid_client"
  | Exclude<DuplicateError, "duplicate_partner_client_id">
  | Exclude<CountryError, "invalid_place_of_birth">
  | "residency_visa_required";

export type ClientResult<E extends string> = { ok: true; client: ClientView } | { ok: false; error: E };

export interface ClientListQuery {
  statuses: readonly ClientStatus[];
  /** timestamptz text, inclusive; null: unbounded */
  from: string | null;
  to: string | null;
  page: number;
  pageSize: number;
}

export interface ClientPage {
  items: ClientView[];
  total: number;
  page: number;
  page_size: number;
}

/** The unique constraints of migration 0002, and the code a violation of each reports. */
const uniqueConstraints: Record<string, DuplicateError> = {
  clients_partner_client_id_key: "duplicate_partner_client_id",
  clients_email_key: "duplicate_email",
  clients_phone_key: "duplicate_phone",
  clients_government_id_key: "government_id_taken",
};

/** The code of a unique violation that a concurrent request won, or null for any other failure. */
export function duplicateOf(err: unknown): DuplicateError | null {
  if (pgErrorCode(err) !== "23505") return null;
  return uniqueConstraints[pgConstraint(err) ?? ""] ?? null;
}

/** DESIGN "Order of checks": 2026 → 2027 → 2028 → 2016. */
function firstConflict(c: Conflicts): DuplicateError | null {
  if (c.partnerClientId) return "duplicate_partner_client_id";
  if (c.email) return "duplicate_email";
  if (c.phone) return "duplicate_phone";
  if (c.governmentIdNumber) return "government_id_taken";
  return null;
}

/**
 * Whether someone born on `birthDate` (YYYY-MM-DD) is younger than `years` on the UTC day of
 * `nowMs`. Someone born on 29 February comes of age on 1 March in a common year.
 */
export function isUnderAge(birthDate: string, nowMs: number, years: number): boolean {
  const [y = 0, m = 1, d = 1] = birthDate.split("-").map(Number);
  const year = y + years;
  const leap = (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0;
  const [month, day] = m === 2 && d === 29 && !leap ? [3, 1] : [m, d];
  // Zero-padded to six digits, the texts compare as the dates do.
  const comingOfAge = `${String(year).padStart(6, "0")}-${String(month).padStart(2, "0")}-${String(day).padStart(2, "0")}`;
  const today = `00${isoFromMs(nowMs).slice(0, 10)}`;
  return comingOfAge > today;
}

/** 2025: a resident of another country than their citizenship needs both visa fields. */
function visaMissing(f: ClientFields): boolean {
  if (f.residencyId === f.citizenshipId) return false;
  return f.residencyVisaNumber === null || f.residencyVisaNumber === "" || f.residencyVisaDoe === null;
}

const uuidPattern = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

function storedFields(f: ClientFields) {
  return {
    name: f.name,
    email: f.email,
    phone: f.phone,
    residency_id: f.residencyId,
    citizenship_id: f.citizenshipId,
    national_number: f.nationalNumber,
    government_id_number: f.governmentIdNumber,
    government_id_doe: f.governmentIdDoe,
    residency_visa_number: f.residencyVisaNumber,
    residency_visa_doe: f.residencyVisaDoe,
    address: JSON.stringify(f.address),
    employment: JSON.stringify(f.employment),
    trading_volume: f.tradingVolume,
    account_purpose: f.accountPurpose,
  };
}

export class ClientsService {
  readonly #db: Db;
  readonly #clock: Clock;
  readonly #legalAgeYears: number;

  constructor(db: Db, clock: Clock, options: { legalAgeYears: number }) {
    this.#db = db;
    this.#clock = clock;
    this.#legalAgeYears = options.legalAgeYears;
  }

  /**
   * Onboards a personal client, verified and active (spec §3.1). Errors, in this order: 2026,
   * 2027, 2028, 2016, 2021, 2022, 2023, 2024, 2025. A duplicate that a concurrent request inserted
   * first is caught by the database's unique constraint and reported with the same code.
   */
  async create(partnerId: string, input: ClientCreateInput): Promise<ClientResult<CreateError>> {
    const conflict = firstConflict(await findConflicts(this.#db, partnerId, input, null));
    if (conflict !== null) return { ok: false, error: conflict };
    const nowMs = this.#clock.nowMs();
    if (isUnderAge(input.birthDate, nowMs, this.#legalAgeYears))
      return { ok: false, error: "client_under_age" };
    const supported = await supportedCountries(this.#db, [
      input.residencyId,
      input.citizenshipId,
      input.placeOfBirthId,
    ]);
    if (!supported.has(input.residencyId)) return { ok: false, error: "invalid_residency" };
    if (!supported.has(input.citizenshipId)) return { ok: false, error: "invalid_citizenship" };
    if (!supported.has(input.placeOfBirthId)) return { ok: false, error: "invalid_place_of_birth" };
    if (visaMissing(input)) return { ok: false, error: "residency_visa_required" };

    const now = isoFromMs(nowMs);
    try {
      const row = await insertClient(this.#db, {
        partner_id: partnerId,
        partner_client_id: input.partnerClientId,
        account_type: "personal",
        birth_date: input.birthDate,
        place_of_birth_id: input.placeOfBirthId,
        status: "verified",
        active: true,
        ...storedFields(input),
        created_at: now,
        verified_at: now,
        updated_at: now,
      });
      return { ok: true, client: clientView(row) };
    } catch (err) {
      const duplicate = duplicateOf(err);
      if (duplicate === null) throw err;
      return { ok: false, error: duplicate };
    }
  }

  /** The partner's client, or null (2008). */
  async get(partnerId: string, partnerClientId: string): Promise<ClientView | null> {
    const row = await findClient(this.#db, partnerId, partnerClientId);
    return row ? clientView(row) : null;
  }

  /**
   * Full replacement of the mutable fields (spec §2.1 rules 6 and 7). Errors, in this order: 2008,
   * 2027, 2028, 2016, 2022, 2023, 2025.
   */
  async update(
    partnerId: string,
    partnerClientId: string,
    fields: ClientFields,
  ): Promise<ClientResult<UpdateError>> {
    const existing = await findClient(this.#db, partnerId, partnerClientId);
    if (existing === undefined) return { ok: false, error: "invalid_client" };
    const conflict = firstConflict(
      await findConflicts(this.#db, partnerId, { ...fields, partnerClientId: null }, existing.id),
    );
    if (conflict === "duplicate_partner_client_id")
      throw new Error("unreachable: no partner_client_id given");
    if (conflict !== null) return { ok: false, error: conflict };
    const supported = await supportedCountries(this.#db, [fields.residencyId, fields.citizenshipId]);
    if (!supported.has(fields.residencyId)) return { ok: false, error: "invalid_residency" };
    if (!supported.has(fields.citizenshipId)) return { ok: false, error: "invalid_citizenship" };
    if (visaMissing(fields)) return { ok: false, error: "residency_visa_required" };
    try {
      const row = await updateClient(this.#db, existing.id, {
        ...storedFields(fields),
        updated_at: isoFromMs(this.#clock.nowMs()),
      });
      if (row === undefined) return { ok: false, error: "invalid_client" };
      return { ok: true, client: clientView(row) };
    } catch (err) {
      const duplicate = duplicateOf(err);
      if (duplicate === null || duplicate === "duplicate_partner_client_id") throw err;
      return { ok: false, error: duplicate };
    }
  }

  /** Sets the active flag (spec §3.2), for the partner or the operator. Errors: 2008. */
  async setActive(
    partnerId: string,
    partnerClientId: string,
    active: boolean,
  ): Promise<ClientResult<"invalid_client">> {
    return this.#change(partnerId, partnerClientId, () => ({ active }));
  }

  /**
   * The compliance team's status decision (spec §3.1: only the operator changes it). verified_at
   * is kept while the client stays verified, set when it becomes verified, and null otherwise.
   * Errors: 2008 (also for a partner id that is not a UUID).
   */
  async setStatus(
    partnerId: string,
    partnerClientId: string,
    status: ClientStatus,
  ): Promise<ClientResult<"invalid_client">> {
    return this.#change(partnerId, partnerClientId, (row, now) => ({
      status,
      verified_at: status === "verified" ? (row.status === "verified" ? row.verified_at : now) : null,
    }));
  }

  /** The operator's view of one client. Errors: 2008. */
  async show(partnerId: string, partnerClientId: string): Promise<ClientResult<"invalid_client">> {
    const row = uuidPattern.test(partnerId)
      ? await findClient(this.#db, partnerId, partnerClientId)
      : undefined;
    return row ? { ok: true, client: clientView(row) } : { ok: false, error: "invalid_client" };
  }

  async list(partnerId: string, q: ClientListQuery): Promise<ClientPage> {
    const { rows, total } = await listClients(
      this.#db,
      partnerId,
      { statuses: q.statuses, from: q.from, to: q.to },
      q.page,
      q.pageSize,
    );
    return { items: rows.map(clientView), total, page: q.page, page_size: q.pageSize };
  }

  async #change(
    partnerId: string,
    partnerClientId: string,
    changes: (
      row: ClientRow,
      nowIso: string,
    ) => { active?: boolean; status?: ClientStatus; verified_at?: string | null },
  ): Promise<ClientResult<"invalid_client">> {
    // The operator passes partner ids as typed; PostgreSQL would refuse a non-UUID with an error.
    if (!uuidPattern.test(partnerId)) return { ok: false, error: "invalid_client" };
    const existing = await findClient(this.#db, partnerId, partnerClientId);
    if (existing === undefined) return { ok: false, error: "invalid_client" };
    const now = isoFromMs(this.#clock.nowMs());
    const row = await updateClient(this.#db, existing.id, { ...changes(existing, now), updated_at: now });
    return row ? { ok: true, client: clientView(row) } : { ok: false, error: "invalid_client" };
  }
}
