// Operator use cases on partners: provisioning, keys, allow-lists, enabling. Expected failures are
// returned as values; the admin routes map them to HTTP.

import { parsePublicKey } from "@counterpart/protocol";
import { isCidrOrIp } from "../../config/config.ts";
import type { Db } from "../../db/database.ts";
import { isoFromMs } from "../../db/time.ts";
import type { Clock } from "../../platform/clock.ts";
import type { Random } from "../../platform/random.ts";
import {
  findPartner,
  insertPartner,
  listPartners,
  type PartnerRow,
  updatePartner,
} from "./partners-store.ts";

export type PartnerFailure =
  | { error: "partner_not_found" }
  | { error: "invalid_public_key"; reason: "not_pem" | "not_ed25519" | "small_order" }
  | { error: "invalid_cidr"; value: string }
  | { error: "invalid_name" };

export type PartnerResult = { ok: true; partner: PartnerView } | ({ ok: false } & PartnerFailure);

export interface PartnerView {
  id: string;
  name: string;
  active: boolean;
  has_public_key: boolean;
  public_key_pem: string | null;
  allowed_ips: string[];
  created_at: string;
  updated_at: string;
}

export function partnerView(row: PartnerRow): PartnerView {
  return {
    id: row.id,
    name: row.name,
    active: row.active,
    has_public_key: row.public_key_pem !== null,
    public_key_pem: row.public_key_pem,
    allowed_ips: row.allowed_ips,
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
  async create(input: {
    name: string;
    publicKeyPem: string | null;
    allowIps: string[];
    id?: string;
  }): Promise<PartnerResult> {
    const name = input.name.trim();
    if (name.length < 1 || name.length > 255) return { ok: false, error: "invalid_name" };
    const key = checkKey(input.publicKeyPem);
    if (!key.ok) return key;
    const ips = checkIps(input.allowIps);
    if (!ips.ok) return ips;
    const row = await insertPartner(this.#db, {
      id: input.id ?? this.#random.uuid(),
      name,
      public_key_pem: key.pem,
      allowed_ips: ips.ips,
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

  /** Errors: partner_not_found, invalid_public_key. */
  async setKey(id: string, publicKeyPem: string): Promise<PartnerResult> {
    const key = checkKey(publicKeyPem);
    if (!key.ok) return key;
    return this.#update(id, { public_key_pem: key.pem });
  }

  /** Errors: partner_not_found, invalid_cidr. */
  async setIps(id: string, allowIps: string[]): Promise<PartnerResult> {
    const ips = checkIps(allowIps);
    if (!ips.ok) return ips;
    return this.#update(id, { allowed_ips: ips.ips });
  }

  /** Errors: partner_not_found. */
  async setActive(id: string, active: boolean): Promise<PartnerResult> {
    return this.#update(id, { active });
  }

  async #update(id: string, changes: Parameters<typeof updatePartner>[2]): Promise<PartnerResult> {
    if (!isUuid(id)) return { ok: false, error: "partner_not_found" };
    const row = await updatePartner(this.#db, id, changes, isoFromMs(this.#clock.nowMs()));
    return row ? { ok: true, partner: partnerView(row) } : { ok: false, error: "partner_not_found" };
  }
}

function isUuid(id: string): boolean {
  return /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/.test(id);
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
