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
import { findPartner, recordSignature } from "./partners-store.ts";

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
  | "replay";

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

    const partner = await findPartner(this.#db, partnerId.toLowerCase());
    const key = partner?.public_key_pem ? this.#key(partner.public_key_pem) : null;
    const canonical = canonicalString({ timestamp, method: req.method, path, body: req.body ?? "" });
    // Verify even when the partner is unknown, so the time taken does not say which it was.
    const verified = verifySignature(key ?? this.#standInKey, canonical, sigBytes);

    if (partner === undefined) return fail("unknown_partner");
    if (!partner.active) return fail("inactive_partner");
    if (key === null) return fail("no_public_key");
    if (!this.#ipAllowed(partner.allowed_ips, req.clientIp)) return fail("ip_not_allowed");
    if (!verified) return fail("signature_mismatch");

    if (stateChanging.has(req.method)) {
      const expiresAtMs = Number(timestamp) + limits.timestampWindowMs + 1_000;
      const fresh = await recordSignature(this.#db, partner.id, sigBytes, isoFromMs(expiresAtMs));
      if (!fresh) return fail("replay");
    }
    return { ok: true, partnerId: partner.id };
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
