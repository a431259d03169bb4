// Client use cases (docs/reference.md §2.1, §3.1, §3.2, §4.6): onboarding, reading, full-replacement update,
// the active flag, the list; and the operator's compliance actions (status, active). Expected
// failures are returned as values named after the error catalog; routes map them to HTTP.

import type { Db } from "../../db/database.ts";
import { databaseError } from "../../db/errors.ts";
import type { ClientStatus } from "../../db/schema.ts";
import { isoFromMs } from "../../db/time.ts";
import { inTransaction, type Tx } from "../../db/transaction.ts";
import type { Clock } from "../../platform/clock.ts";
import { isUuid } from "../../platform/uuid.ts";
import { type AuditNote, missingReason, recordAudit } from "../audit/index.ts";
import { type ClientEventRecord, recordClientEvent } from "../events/index.ts";
import { type ClientPage, type ClientRow, type ClientView, clientView } from "./client-views.ts";
import {
  type Conflicts,
  findClient,
  findClientForUpdate,
  findConflicts,
  insertClient,
  listClients,
  searchClients,
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

export type { ClientPage };

/** The unique constraints of migration 0002, and the code a violation of each reports. */
const uniqueConstraints: Record<string, DuplicateError> = {
  clients_partner_client_id_key: "duplicate_partner_client_id",
  clients_email_key: "duplicate_email",
  clients_phone_key: "duplicate_phone",
  clients_government_id_key: "government_id_taken",
};

/** The code of a unique violation that a concurrent request won, or null for any other failure. */
export function duplicateOf(err: unknown): DuplicateError | null {
  const e = databaseError(err);
  return e?.kind === "unique_violation" ? (uniqueConstraints[e.constraint] ?? null) : null;
}

/** The order of docs/reference.md §4.6: 2026 → 2027 → 2028 → 2016. */
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

/** The client as the API returns it, and its event written in the same transaction. */
async function withEvent(tx: Tx, row: ClientRow, type: ClientEventRecord["type"]): Promise<ClientView> {
  const view = clientView(row);
  await recordClientEvent(tx, {
    partnerId: row.partner_id,
    clientId: row.id,
    type,
    data: view,
    createdAt: row.updated_at,
  });
  return view;
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
   * Onboards a personal client, verified and active (docs/reference.md §3.1). Errors, in this order: 2026,
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
      const client = await inTransaction(this.#db, async (tx) => {
        const row = await insertClient(tx, {
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
        return withEvent(tx, row, "client.created");
      });
      return { ok: true, client };
    } catch (err) {
      const duplicate = duplicateOf(err);
      if (duplicate === null) throw err;
      return { ok: false, error: duplicate };
    }
  }

  /**
   * Full replacement of the mutable fields (docs/reference.md §2.1 rules 6 and 7). Errors, in this order: 2008,
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
      const client = await inTransaction(this.#db, async (tx) => {
        const row = await updateClient(tx, existing.id, {
          ...storedFields(fields),
          updated_at: isoFromMs(this.#clock.nowMs()),
        });
        return row === undefined ? null : withEvent(tx, row, "client.updated");
      });
      if (client === null) return { ok: false, error: "invalid_client" };
      return { ok: true, client };
    } catch (err) {
      const duplicate = duplicateOf(err);
      if (duplicate === null || duplicate === "duplicate_partner_client_id") throw err;
      return { ok: false, error: duplicate };
    }
  }

  /**
   * Sets the active flag (docs/reference.md §3.2): by the partner itself (`note` null: not an
   * operator action, so not on the audit trail), or by an operator, whose change either way (blocking or unblocking) needs a reason.
   * Errors: 2008, reason_required.
   */
  async setActive(
    partnerId: string,
    partnerClientId: string,
    active: boolean,
    note: AuditNote | null,
  ): Promise<ClientResult<"invalid_client" | "reason_required">> {
    if (note !== null && missingReason(note)) return { ok: false, error: "reason_required" };
    return this.#change(
      partnerId,
      partnerClientId,
      note,
      "client.active",
      "client.activation_changed",
      () => ({
        active,
      }),
    );
  }

  /**
   * The compliance team's status decision (docs/reference.md §3.1: only the operator changes it). verified_at
   * is kept while the client stays verified, set when it becomes verified, and null otherwise.
   * A status change needs a reason (the audit trail). Errors: 2008 (also for a partner id that is
   * not a UUID), reason_required.
   */
  async setStatus(
    partnerId: string,
    partnerClientId: string,
    status: ClientStatus,
    note: AuditNote,
  ): Promise<ClientResult<"invalid_client" | "reason_required">> {
    if (missingReason(note)) return { ok: false, error: "reason_required" };
    return this.#change(
      partnerId,
      partnerClientId,
      note,
      "client.status",
      "client.status_changed",
      (row, now) => ({
        status,
        verified_at: status === "verified" ? (row.status === "verified" ? row.verified_at : now) : null,
      }),
    );
  }

  /** The back office's lookup across partners (exact matches), each client with its partner. */
  async search(
    f: { q: string | null; partnerId: string | null; status: ClientStatus | null },
    page: number,
    pageSize: number,
  ): Promise<{ items: { partner_id: string; client: ClientView }[]; total: number }> {
    if (f.partnerId !== null && !isUuid(f.partnerId)) return { items: [], total: 0 };
    const { rows, total } = await searchClients(this.#db, f, page, pageSize);
    return { items: rows.map((r) => ({ partner_id: r.partner_id, client: clientView(r) })), total };
  }

  /**
   * One client of a partner: for the partner (its authenticated id) and for the operator (a
   * partner id as typed, which PostgreSQL would refuse with an error when it is not a UUID).
   * Errors: 2008.
   */
  async show(partnerId: string, partnerClientId: string): Promise<ClientResult<"invalid_client">> {
    const row = isUuid(partnerId) ? await findClient(this.#db, partnerId, partnerClientId) : undefined;
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

  /**
   * A change of the active flag or the status in one transaction, with its event (when the flag or
   * status asked for differs from the client's: the row's updated_at still moves, as it always
   * did, but nothing changed, so no event) and, for an operator (`note` given), its audit entry
   * (the fields set, before and after).
   */
  async #change(
    partnerId: string,
    partnerClientId: string,
    note: AuditNote | null,
    action: string,
    eventType: "client.activation_changed" | "client.status_changed",
    changes: (
      row: ClientRow,
      nowIso: string,
    ) => { active?: boolean; status?: ClientStatus; verified_at?: string | null },
  ): Promise<ClientResult<"invalid_client">> {
    // The operator passes partner ids as typed; PostgreSQL would refuse a non-UUID with an error.
    if (!isUuid(partnerId)) return { ok: false, error: "invalid_client" };
    const existing = await findClient(this.#db, partnerId, partnerClientId);
    if (existing === undefined) return { ok: false, error: "invalid_client" };
    const now = isoFromMs(this.#clock.nowMs());
    const field = eventType === "client.activation_changed" ? "active" : "status";
    const client = await inTransaction(this.#db, async (tx) => {
      // Judged again on the row locked by the update, so that of two concurrent equal changes one
      // writes the event.
      const current = await findClientForUpdate(tx, existing.id);
      if (current === undefined) return null;
      const set = changes(current, now);
      const row = await updateClient(tx, existing.id, { ...set, updated_at: now });
      if (row === undefined) return null;
      if (note !== null) {
        const fields = Object.keys(set) as (keyof typeof set)[];
        await recordAudit(tx, this.#clock, note, {
          action,
          targetType: "client",
          targetId: `${partnerId}/${partnerClientId}`,
          before: Object.fromEntries(fields.map((f) => [f, current[f]])),
          after: Object.fromEntries(fields.map((f) => [f, row[f]])),
        });
      }
      return set[field] === current[field] ? clientView(row) : withEvent(tx, row, eventType);
    });
    return client ? { ok: true, client } : { ok: false, error: "invalid_client" };
  }
}
