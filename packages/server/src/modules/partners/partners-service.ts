// Operator use cases on partners: provisioning, keys, allow-lists, enabling. Expected failures are
// returned as values; the admin routes map them to HTTP.

import { parsePublicKey } from "@counterpart/protocol";
import { isCidrOrIp } from "../../config/config.ts";
import type { Db } from "../../db/database.ts";
import { isoFromMs } from "../../db/time.ts";
import { inTransaction, type Tx } from "../../db/transaction.ts";
import type { Clock } from "../../platform/clock.ts";
import type { Random } from "../../platform/random.ts";
import { isUuid } from "../../platform/uuid.ts";
import { type AuditNote, missingReason, recordAudit } from "../audit/index.ts";
import { verificationsPerRequest } from "./partner-auth.ts";
import type { PartnerKeyView, PartnerView } from "./partner-views.ts";
import {
  findPartner,
  insertPartner,
  insertPartnerKey,
  listPartnerKeys,
  listPartners,
  lockPartner,
  mirrorNewestKey,
  type PartnerKeyRow,
  type PartnerRow,
  retirePartnerKeys,
  updatePartner,
  updateRateLimits,
} from "./partners-store.ts";
import { defaultRateLimits, type RateClass, type RateLimitOverrides } from "./rate-limits.ts";

/**
 * The most active keys a partner may hold at once: enough to add a new key while the old one is
 * still in use, with one to spare. Every request costs this many verifications (partner-auth.ts).
 */
export const maxActiveKeys = verificationsPerRequest;

/** The label of the key given at creation and by `PUT …/key`, and of keys from before migration 0012. */
const setKeyLabel = "initial";

export type PartnerFailure =
  | { error: "partner_not_found" }
  | { error: "invalid_public_key"; reason: "not_pem" | "not_ed25519" | "small_order" }
  | { error: "invalid_cidr"; value: string }
  | { error: "invalid_name" }
  | { error: "invalid_label" }
  | { error: "too_many_keys"; max: number }
  | { error: "key_already_active" }
  | { error: "key_not_found" }
  | { error: "reason_required" };

export type PartnerResult = { ok: true; partner: PartnerView } | ({ ok: false } & PartnerFailure);
export type PartnerKeyResult = { ok: true; key: PartnerKeyView } | ({ ok: false } & PartnerFailure);
export type PartnerKeysResult = { ok: true; keys: PartnerKeyView[] } | ({ ok: false } & PartnerFailure);

export function partnerKeyView(row: PartnerKeyRow): PartnerKeyView {
  return {
    id: row.id,
    partner_id: row.partner_id,
    label: row.label,
    public_key_pem: row.public_key_pem,
    active: row.retired_at === null,
    created_at: row.created_at,
    retired_at: row.retired_at,
  };
}

function budget(value: number | null, cls: RateClass) {
  return { per_minute: value ?? defaultRateLimits[cls], default: value === null };
}

export function partnerView(row: PartnerRow): PartnerView {
  return {
    id: row.id,
    name: row.name,
    active: row.active,
    has_public_key: row.public_key_pem !== null,
    public_key_pem: row.public_key_pem,
    allowed_ips: row.allowed_ips,
    rate_limits: {
      reads: budget(row.rate_limit_reads, "reads"),
      writes: budget(row.rate_limit_writes, "writes"),
      quotes: budget(row.rate_limit_quotes, "quotes"),
    },
    created_at: row.created_at,
    updated_at: row.updated_at,
  };
}

export class PartnersService {
  readonly #db: Db;
  readonly #clock: Clock;
  readonly #random: Random;

  constructor(db: Db, clock: Clock, random: Random) {
    this.#db = db;
    this.#clock = clock;
    this.#random = random;
  }

  /** Errors: invalid_name, invalid_public_key, invalid_cidr. */
  async create(
    input: {
      name: string;
      publicKeyPem: string | null;
      allowIps: string[];
      id?: string;
    },
    note: AuditNote,
  ): Promise<PartnerResult> {
    const name = input.name.trim();
    if (name.length < 1 || name.length > 255) return { ok: false, error: "invalid_name" };
    const key = checkKey(input.publicKeyPem);
    if (!key.ok) return key;
    const ips = checkIps(input.allowIps);
    if (!ips.ok) return ips;
    const id = input.id ?? this.#random.uuid();
    const pem = key.pem;
    const row = await inTransaction(this.#db, async (tx) => {
      const inserted = await insertPartner(tx, { id, name, public_key_pem: pem, allowed_ips: ips.ips });
      if (pem !== null) await insertPartnerKey(tx, this.#newKey(id, setKeyLabel, pem));
      await this.#audit(tx, note, "partner.create", id, null, partnerView(inserted));
      return inserted;
    });
    return { ok: true, partner: partnerView(row) };
  }

  async list(): Promise<PartnerView[]> {
    return (await listPartners(this.#db)).map(partnerView);
  }

  /** Errors: partner_not_found. */
  async show(id: string): Promise<PartnerResult> {
    const row = isUuid(id) ? await findPartner(this.#db, id) : undefined;
    return row ? { ok: true, partner: partnerView(row) } : { ok: false, error: "partner_not_found" };
  }

  /**
   * Replaces all the partner's keys by this one: its active keys are retired and this one added,
   * in one transaction. Errors: partner_not_found, invalid_public_key.
   */
  async setKey(id: string, publicKeyPem: string, note: AuditNote): Promise<PartnerResult> {
    const key = checkKey(publicKeyPem);
    if (!key.ok) return key;
    const pem = key.pem as string;
    if (!isUuid(id)) return { ok: false, error: "partner_not_found" };
    const row = await this.#changeKeys(id, async (tx, nowIso) => {
      const retired = await retirePartnerKeys(tx, id, nowIso);
      const added = await insertPartnerKey(tx, this.#newKey(id, setKeyLabel, pem));
      await this.#audit(
        tx,
        note,
        "partner.key_replace",
        id,
        { active_keys: retired.map((k) => k.id) },
        { active_keys: [added.id], public_key_pem: added.public_key_pem },
      );
      return true;
    });
    return row ? { ok: true, partner: partnerView(row) } : { ok: false, error: "partner_not_found" };
  }

  /** Every key of the partner, retired ones too, oldest first. Errors: partner_not_found. */
  async listKeys(id: string): Promise<PartnerKeysResult> {
    if (!isUuid(id) || (await findPartner(this.#db, id)) === undefined) {
      return { ok: false, error: "partner_not_found" };
    }
    return { ok: true, keys: (await listPartnerKeys(this.#db, id)).map(partnerKeyView) };
  }

  /**
   * Adds an active key; the partner's other keys stay active. Errors: partner_not_found,
   * invalid_public_key, invalid_label, too_many_keys (it has maxActiveKeys already; nothing
   * changes), key_already_active.
   */
  async addKey(id: string, label: string, publicKeyPem: string, note: AuditNote): Promise<PartnerKeyResult> {
    const trimmed = label.trim();
    if (trimmed.length < 1 || trimmed.length > 100) return { ok: false, error: "invalid_label" };
    const key = checkKey(publicKeyPem);
    if (!key.ok) return key;
    const pem = key.pem as string;
    if (!isUuid(id)) return { ok: false, error: "partner_not_found" };
    let failure: PartnerFailure | undefined;
    let added: PartnerKeyRow | undefined;
    const row = await this.#changeKeys(id, async (tx) => {
      failure = undefined;
      added = undefined;
      const active = (await listPartnerKeys(tx, id)).filter((k) => k.retired_at === null);
      if (active.some((k) => k.public_key_pem === pem)) {
        failure = { error: "key_already_active" };
        return false;
      }
      if (active.length >= maxActiveKeys) {
        failure = { error: "too_many_keys", max: maxActiveKeys };
        return false;
      }
      added = await insertPartnerKey(tx, this.#newKey(id, trimmed, pem));
      await this.#audit(tx, note, "partner.key_add", id, null, partnerKeyView(added));
      return true;
    });
    if (failure !== undefined) return { ok: false, ...failure };
    if (row === undefined || added === undefined) return { ok: false, error: "partner_not_found" };
    return { ok: true, key: partnerKeyView(added) };
  }

  /**
   * Retires an active key: the next request signed by it is refused, in every process. Retiring a
   * retired key answers it unchanged. Errors: partner_not_found, key_not_found.
   */
  async retireKey(id: string, keyId: string, note: AuditNote): Promise<PartnerKeyResult> {
    if (!isUuid(id)) return { ok: false, error: "partner_not_found" };
    if (!isUuid(keyId)) return { ok: false, error: "key_not_found" };
    let retired: PartnerKeyRow | undefined;
    const row = await this.#changeKeys(id, async (tx, nowIso) => {
      retired = (await retirePartnerKeys(tx, id, nowIso, keyId))[0];
      if (retired !== undefined) {
        const after = partnerKeyView(retired);
        await this.#audit(
          tx,
          note,
          "partner.key_retire",
          id,
          { ...after, active: true, retired_at: null },
          after,
        );
        return true;
      }
      retired = (await listPartnerKeys(tx, id)).find((k) => k.id === keyId);
      return false;
    });
    if (row === undefined) return { ok: false, error: "partner_not_found" };
    if (retired === undefined) return { ok: false, error: "key_not_found" };
    return { ok: true, key: partnerKeyView(retired) };
  }

  /**
   * Runs a change of the partner's keys with its row locked (so two operators cannot both add a
   * third key), then mirrors the newest active key into partners.public_key_pem. `change` answers
   * whether it changed anything. Answers the partner's row, or undefined when it does not exist.
   */
  async #changeKeys(
    id: string,
    change: (tx: Tx, nowIso: string) => Promise<boolean>,
  ): Promise<PartnerRow | undefined> {
    return inTransaction(this.#db, async (tx) => {
      if (!(await lockPartner(tx, id))) return undefined;
      const nowIso = isoFromMs(this.#clock.nowMs());
      if (!(await change(tx, nowIso))) return findPartner(tx, id);
      return mirrorNewestKey(tx, id, nowIso);
    });
  }

  #newKey(partnerId: string, label: string, pem: string) {
    return {
      id: this.#random.uuid(),
      partner_id: partnerId,
      label,
      public_key_pem: pem,
      created_at: isoFromMs(this.#clock.nowMs()),
    };
  }

  /** Errors: partner_not_found, invalid_cidr. */
  async setIps(id: string, allowIps: string[], note: AuditNote): Promise<PartnerResult> {
    const ips = checkIps(allowIps);
    if (!ips.ok) return ips;
    return this.#update(id, { allowed_ips: ips.ips }, note, "partner.allowed_ips");
  }

  /**
   * Sets the partner's rate-limit budgets (requests per minute; null: the default; a class left out
   * stays). Every process applies them from the partner's next request. Errors: partner_not_found.
   */
  async setRateLimits(
    id: string,
    changes: Partial<RateLimitOverrides>,
    note: AuditNote,
  ): Promise<PartnerResult> {
    if (!isUuid(id)) return { ok: false, error: "partner_not_found" };
    const row = await inTransaction(this.#db, async (tx) => {
      const before = await lockPartner(tx, id);
      if (!before) return undefined;
      const found = await findPartner(tx, id);
      const after = await updateRateLimits(tx, id, changes, isoFromMs(this.#clock.nowMs()));
      if (after === undefined || found === undefined) return undefined;
      const fields = (["reads", "writes", "quotes"] as const)
        .filter((c) => changes[c] !== undefined)
        .map((c) => `rate_limit_${c}` as const);
      await this.#audit(
        tx,
        note,
        "partner.limits",
        id,
        Object.fromEntries(fields.map((f) => [f, found[f]])),
        Object.fromEntries(fields.map((f) => [f, after[f]])),
      );
      return after;
    });
    return row ? { ok: true, partner: partnerView(row) } : { ok: false, error: "partner_not_found" };
  }

  /** Disabling or enabling needs a reason (the audit trail). Errors: partner_not_found, reason_required. */
  async setActive(id: string, active: boolean, note: AuditNote): Promise<PartnerResult> {
    if (missingReason(note)) return { ok: false, error: "reason_required" };
    return this.#update(id, { active }, note, "partner.active");
  }

  async #update(
    id: string,
    changes: Parameters<typeof updatePartner>[2],
    note: AuditNote,
    action: string,
  ): Promise<PartnerResult> {
    if (!isUuid(id)) return { ok: false, error: "partner_not_found" };
    const row = await inTransaction(this.#db, async (tx) => {
      const before = await lockPartner(tx, id);
      if (!before) return undefined;
      const found = await findPartner(tx, id);
      const after = await updatePartner(tx, id, changes, isoFromMs(this.#clock.nowMs()));
      if (after === undefined || found === undefined) return undefined;
      const fields = Object.keys(changes) as (keyof typeof changes)[];
      await this.#audit(
        tx,
        note,
        action,
        id,
        Object.fromEntries(fields.map((f) => [f, found[f]])),
        Object.fromEntries(fields.map((f) => [f, after[f]])),
      );
      return after;
    });
    return row ? { ok: true, partner: partnerView(row) } : { ok: false, error: "partner_not_found" };
  }

  #audit(
    tx: Tx,
    note: AuditNote,
    action: string,
    id: string,
    before: unknown,
    after: unknown,
  ): Promise<void> {
    return recordAudit(tx, this.#clock, note, { action, targetType: "partner", targetId: id, before, after });
  }
}

function checkKey(
  pem: string | null,
):
  | { ok: true; pem: string | null }
  | { ok: false; error: "invalid_public_key"; reason: "not_pem" | "not_ed25519" | "small_order" } {
  if (pem === null) return { ok: true, pem: null };
  const parsed = parsePublicKey(pem);
  if (!parsed.ok) return { ok: false, error: "invalid_public_key", reason: parsed.reason };
  return { ok: true, pem: parsed.pem };
}

function checkIps(
  values: string[],
): { ok: true; ips: string[] } | { ok: false; error: "invalid_cidr"; value: string } {
  for (const v of values) {
    if (!isCidrOrIp(v)) return { ok: false, error: "invalid_cidr", value: v };
  }
  return { ok: true, ips: values };
}
