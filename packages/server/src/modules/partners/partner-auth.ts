// Verifies a signed partner request (spec §5, DESIGN "Authentication" and "Hardening"). Every
// failure is the same answer to the caller; the cause is returned for the operator's debug log.
// An unknown partner still costs a signature verification against a stand-in key, so the path
// taken does not tell a valid partner id from an invalid one.

import type { KeyObject } from "node:crypto";
import {
  canonicalPath,
  canonicalString,
  checkTimestamp,
  decodeSignature,
  generateKeyPair,
  parsePublicKey,
  verifySignature,
} from "@counterpart/protocol";
import ipaddr from "ipaddr.js";
import { limits } from "../../config/limits.ts";
import type { Db } from "../../db/database.ts";
import { isoFromMs } from "../../db/time.ts";
import type { Clock } from "../../platform/clock.ts";
import { type PartnerCredentials, readCredentials } from "./partners-store.ts";

export type AuthFailureCause =
  | "missing_header"
  | "duplicate_header"
  | "bad_partner_id"
  | "bad_timestamp"
  | "stale_timestamp"
  | "bad_signature_encoding"
  | "bad_path"
  | "unknown_partner"
  | "inactive_partner"
  | "no_public_key"
  | "ip_not_allowed"
  | "signature_mismatch"
  | "replay"
  | "partner_changing";

export type AuthResult = { ok: true; partnerId: string } | { ok: false; cause: AuthFailureCause };

export interface SignedRequest {
  /** Header values as received; an array means the header was sent more than once. */
  partnerId: string | string[] | undefined;
  timestamp: string | string[] | undefined;
  signature: string | string[] | undefined;
  method: string;
  /** The raw request target, as on the request line. */
  target: string;
  body: Uint8Array | undefined;
  clientIp: string;
}

const uuidPattern = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const stateChanging = new Set(["POST", "PUT", "DELETE", "PATCH"]);

type Cidr = [ipaddr.IPv4 | ipaddr.IPv6, number];

export class PartnerAuthenticator {
  readonly #db: Db;
  readonly #clock: Clock;
  readonly #keys = new Map<string, KeyObject>();
  /** The credentials last read per partner id; checked against the row by every request. */
  readonly #credentials = new Map<string, PartnerCredentials>();
  readonly #allowLists = new Map<string, Cidr[]>();
  readonly #standInKey: KeyObject;

  constructor(db: Db, clock: Clock) {
    this.#db = db;
    this.#clock = clock;
    const standIn = parsePublicKey(generateKeyPair().publicKeyPem);
    if (!standIn.ok) throw new Error("could not make the stand-in key");
    this.#standInKey = standIn.key;
  }

  async authenticate(req: SignedRequest): Promise<AuthResult> {
    const { partnerId, timestamp, signature } = req;
    if (partnerId === undefined || timestamp === undefined || signature === undefined) {
      return fail("missing_header");
    }
    if (Array.isArray(partnerId) || Array.isArray(timestamp) || Array.isArray(signature)) {
      return fail("duplicate_header");
    }
    if (!uuidPattern.test(partnerId)) return fail("bad_partner_id");
    if (!/^[0-9]{13}$/.test(timestamp)) return fail("bad_timestamp");
    if (!checkTimestamp(timestamp, this.#clock.nowMs())) return fail("stale_timestamp");
    const sigBytes = decodeSignature(signature);
    if (sigBytes === null) return fail("bad_signature_encoding");
    const path = canonicalPath(req.target);
    if (path === null) return fail("bad_path");

    const id = partnerId.toLowerCase();
    const canonical = canonicalString({ timestamp, method: req.method, path, body: req.body ?? "" });
    const expiresAtIso = stateChanging.has(req.method)
      ? isoFromMs(Number(timestamp) + limits.timestampWindowMs + 1_000)
      : null;

    // Every request reads the partner's row, so that a disable, a new key or a new allow-list
    // takes effect at once in every process. A state-changing request also records its signature
    // in that same statement; for that the signature is judged first, by the credentials this
    // process last read, and the statement records it only if the row still holds them.
    let partner = this.#credentials.get(id);
    let current = false;
    if (partner === undefined) {
      partner = (await readCredentials(this.#db, id)).partner;
      this.#remember(id, partner);
      current = true;
    }
    for (let round = 0; round < 3; round++) {
      // Verified even when the partner is unknown (against a stand-in key): an unknown partner
      // costs one statement and one verification, as a known one does.
      const judged = this.#judge(partner, canonical, sigBytes, req.clientIp);
      if (current && (!judged.ok || expiresAtIso === null)) return judged;
      const record =
        judged.ok && partner !== undefined && expiresAtIso !== null
          ? { signature: sigBytes, expiresAtIso, judgedBy: partner }
          : undefined;
      const read = await readCredentials(this.#db, id, record);
      if (!sameCredentials(read.partner, partner)) {
        // Changed since this process last read it: judge again by the row as it is now.
        partner = read.partner;
        this.#remember(id, partner);
        current = true;
        continue;
      }
      if (!judged.ok) return judged;
      if (expiresAtIso !== null && !read.recorded) return fail("replay");
      return judged;
    }
    // The row changed under every read: refuse rather than loop.
    return fail("partner_changing");
  }

  /** Judges a request by a partner's credentials, without the replay guard. */
  #judge(
    partner: PartnerCredentials | undefined,
    canonical: string,
    sigBytes: Buffer,
    clientIp: string,
  ): AuthResult {
    const key = partner?.public_key_pem ? this.#key(partner.public_key_pem) : null;
    const verified = verifySignature(key ?? this.#standInKey, canonical, sigBytes);
    if (partner === undefined) return fail("unknown_partner");
    if (!partner.active) return fail("inactive_partner");
    if (key === null) return fail("no_public_key");
    if (!this.#ipAllowed(partner.allowed_ips, clientIp)) return fail("ip_not_allowed");
    if (!verified) return fail("signature_mismatch");
    return { ok: true, partnerId: partner.id };
  }

  #remember(id: string, partner: PartnerCredentials | undefined): void {
    // Only partners that exist are kept, so unknown ids sent at random cannot fill the map.
    if (partner === undefined) {
      this.#credentials.delete(id);
      return;
    }
    if (this.#credentials.size >= 10_000) this.#credentials.clear();
    this.#credentials.set(id, partner);
  }

  #key(pem: string): KeyObject | null {
    let key = this.#keys.get(pem);
    if (key === undefined) {
      const parsed = parsePublicKey(pem);
      if (!parsed.ok) return null;
      key = parsed.key;
      if (this.#keys.size > 10_000) this.#keys.clear();
      this.#keys.set(pem, key);
    }
    return key;
  }

  #ipAllowed(allowed: string[], clientIp: string): boolean {
    if (allowed.length === 0 || !ipaddr.isValid(clientIp)) return false;
    const cacheKey = allowed.join(",");
    let ranges = this.#allowLists.get(cacheKey);
    if (ranges === undefined) {
      ranges = allowed.map(parseRange);
      if (this.#allowLists.size > 10_000) this.#allowLists.clear();
      this.#allowLists.set(cacheKey, ranges);
    }
    const ip = normaliseIp(clientIp);
    return ranges.some(([range, bits]) => range.kind() === ip.kind() && ip.match(range, bits));
  }
}

function sameCredentials(a: PartnerCredentials | undefined, b: PartnerCredentials | undefined): boolean {
  if (a === undefined || b === undefined) return a === b;
  return (
    a.id === b.id &&
    a.active === b.active &&
    a.public_key_pem === b.public_key_pem &&
    a.allowed_ips.length === b.allowed_ips.length &&
    a.allowed_ips.every((ip, i) => ip === b.allowed_ips[i])
  );
}

function fail(cause: AuthFailureCause): AuthResult {
  return { ok: false, cause };
}

/** IPv4-mapped IPv6 (::ffff:127.0.0.1) is matched as the IPv4 address it carries. */
export function normaliseIp(text: string): ipaddr.IPv4 | ipaddr.IPv6 {
  const ip = ipaddr.parse(text);
  if (ip.kind() === "ipv6" && (ip as ipaddr.IPv6).isIPv4MappedAddress()) {
    return (ip as ipaddr.IPv6).toIPv4Address();
  }
  return ip;
}

/** A CIDR range, or a single address as a full-length range. */
export function parseRange(text: string): Cidr {
  if (text.includes("/")) {
    const [ip, bits] = ipaddr.parseCIDR(text);
    if (ip.kind() === "ipv6" && (ip as ipaddr.IPv6).isIPv4MappedAddress() && bits >= 96) {
      return [(ip as ipaddr.IPv6).toIPv4Address(), bits - 96];
    }
    return [ip, bits];
  }
  const ip = normaliseIp(text);
  return [ip, ip.kind() === "ipv4" ? 32 : 128];
}
