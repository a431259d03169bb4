// Verifies a signed partner request (docs/reference.md §5, docs/decisions.md "Authentication" and "Hardening"). Every
// failure is the same answer to the caller; the cause is returned for the operator's debug log.
// A partner has up to three active keys (docs/operations.md, "Rotating a partner's key"), tried
// newest first. A refusal costs exactly three signature verifications, whatever the partner: its
// active keys, padded with a stand-in key; an unknown partner is verified against the stand-in
// three times. So the time of a refusal does not tell a valid partner id from an invalid one, or a
// partner with one key from one with three. An acceptance stops at the key that verifies: only
// that key's holder can make one, so its time tells nobody anything new (docs/decisions.md, "Keys").

import {
  canonicalPath,
  canonicalString,
  checkTimestamp,
  decodeSignature,
  generateKeyPair,
  parsePublicKey,
} from "@counterpart/protocol";
import ipaddr from "ipaddr.js";
import type { RawBuilder } from "kysely";
import { isCidrOrIp } from "../../config/config.ts";
import { limits } from "../../config/limits.ts";
import type { CredentialWitness } from "../../db/credential-witness.ts";
import type { Db } from "../../db/database.ts";
import { isoFromMs } from "../../db/time.ts";
import type { Clock } from "../../platform/clock.ts";
import { type SharedState, unavailable } from "../../platform/redis.ts";
import {
  chooseVerifier,
  type SignatureVerifier,
  type VerifierLibrary,
  type VerifyKey,
  verifyKeyOf,
} from "../../platform/signature-verifier.ts";
import { isUuid } from "../../platform/uuid.ts";
import {
  credentialsColumn,
  credentialsFromJson,
  type PartnerCredentials,
  readCredentials,
} from "./partners-store.ts";
import type { RateLimitOverrides } from "./rate-limits.ts";
import { SignedWrite } from "./signed-write.ts";

export type AuthFailureCause =
  | "missing_header"
  | "duplicate_header"
  | "bad_partner_id"
  | "bad_timestamp"
  | "stale_timestamp"
  | "bad_signature_encoding"
  | "bad_path"
  | "path_not_routed"
  | "unknown_partner"
  | "inactive_partner"
  | "no_public_key"
  | "ip_not_allowed"
  | "signature_mismatch"
  | "replay"
  | "partner_changing";

export type AuthResult =
  | {
      ok: true;
      partnerId: string;
      rateLimits: RateLimitOverrides;
      /**
       * Set when the request was accepted by the credentials this process kept, without reading
       * them (`provisional`): it is authenticated only once this check settles.
       */
      pending?: CredentialCheck | SignedWrite;
    }
  | { ok: false; cause: AuthFailureCause };

/**
 * A read accepted by the credentials its process kept, still to be confirmed by the partner's row
 * (db/credential-witness.ts): by the row as a statement of the request itself saw it, or else by a
 * statement of its own when the request settles. Until it settles, nothing may be answered but a
 * 401.
 */
export class CredentialCheck implements CredentialWitness {
  readonly partnerId: string;
  readonly #confirm: (seen: PartnerCredentials | undefined, text?: string) => AuthResult;
  readonly #read: () => Promise<PartnerCredentials | undefined>;
  readonly #unchanged: (value: unknown) => AuthResult | undefined;
  #result: AuthResult | null = null;

  /**
   * `confirm` judges the request by the credentials a statement saw (with the text they were read
   * from, when a witness read them); `unchanged` may judge it by that text alone, when it is the
   * text of the very credentials the request was judged by.
   */
  constructor(
    partnerId: string,
    confirm: (seen: PartnerCredentials | undefined, text?: string) => AuthResult,
    read: () => Promise<PartnerCredentials | undefined>,
    unchanged: (value: unknown) => AuthResult | undefined,
  ) {
    this.partnerId = partnerId;
    this.#confirm = confirm;
    this.#read = read;
    this.#unchanged = unchanged;
  }

  column(id: string): RawBuilder<unknown> {
    return credentialsColumn(id);
  }

  observe(value: unknown): void {
    const result =
      this.#unchanged(value) ??
      this.#confirm(credentialsFromJson(value), typeof value === "string" ? value : undefined);
    // A refusal seen by any statement of the request stands.
    if (this.#result === null || this.#result.ok) this.#result = result;
  }

  /** The request's authentication: as its own statement saw the row, or as the row is now. */
  async settle(): Promise<AuthResult> {
    if (this.#result === null) this.#result = this.#confirm(await this.#read());
    return this.#result;
  }
}

export interface SignedRequest {
  /** Header values as received; an array means the header was sent more than once. */
  partnerId: string | string[] | undefined;
  timestamp: string | string[] | undefined;
  signature: string | string[] | undefined;
  method: string;
  /** The raw request target, as on the request line. */
  target: string;
  /** Whether the target's path is the path the router matched; false is a 401. */
  routed: boolean;
  body: Uint8Array | undefined;
  clientIp: string;
}

const stateChanging = new Set(["POST", "PUT", "DELETE", "PATCH"]);

/** Verifications per request: the most active keys a partner may hold (PartnersService). */
export const verificationsPerRequest = 3;

type Cidr = [ipaddr.IPv4 | ipaddr.IPv6, number];

export class PartnerAuthenticator {
  readonly #db: Db;
  readonly #clock: Clock;
  readonly #keys = new Map<string, VerifyKey>();
  /** The credentials last read per partner id; checked against the row by every request. */
  readonly #credentials = new Map<string, PartnerCredentials>();
  /**
   * Per partner id, the text a witnessed read last carried (credentialsColumn) and the kept
   * credentials it was found the same as: the same text again is the same credentials, judged
   * without parsing it (to_jsonb writes the same row the same way).
   */
  readonly #witnessedText = new Map<string, { text: string; kept: PartnerCredentials }>();
  /** Each allow-list's ranges, parsed once per list as kept (a kept credentials object is frozen). */
  readonly #allowLists = new WeakMap<readonly string[], Cidr[]>();
  /**
   * Each client address as parsed (an IPv4-mapped IPv6 one as its IPv4 address), null for text
   * that is no address: ipaddr.js's parsing costs more than the rest of the allow-list check.
   */
  readonly #clientAddresses = new Map<string, ipaddr.IPv4 | ipaddr.IPv6 | null>();
  readonly #standInKey: VerifyKey;
  readonly #verifier: SignatureVerifier;
  /** With REDIS_URL: where accepted signatures are recorded (docs/decisions.md, "Shared state"). */
  readonly #shared: SharedState | null;
  /**
   * Until when (process clock) signatures are also recorded in the database: while Redis is away,
   * and for one signature window after, so a request recorded in the database during the outage is
   * still known when Redis is back.
   */
  #databaseGuardUntilMs = 0;

  /** `verifier`: the library that verifies signatures (by default libsodium's, when it loads). */
  constructor(
    db: Db,
    clock: Clock,
    shared: SharedState | null = null,
    verifier: SignatureVerifier = defaultVerifier(),
  ) {
    this.#db = db;
    this.#clock = clock;
    this.#shared = shared;
    this.#verifier = verifier;
    const standIn = parsePublicKey(generateKeyPair().publicKeyPem);
    if (!standIn.ok) throw new Error("could not make the stand-in key");
    this.#standInKey = verifyKeyOf(standIn.key);
  }

  /** The library this process verifies signatures with. */
  get verifierLibrary(): VerifierLibrary {
    return this.#verifier.library;
  }

  /**
   * Judges a signed request. With `provisional` (a read whose route carries the credentials in its
   * own statement), a request the credentials this process kept accept is not read again here: it
   * comes back with `pending`, which the route's statement or the answer settles. A request they
   * refuse is judged by the row, as every other. With `recordInStatement` (a state-changing route
   * whose statement records the signature), a request the kept credentials accept comes back
   * with a SignedWrite as `pending`, when the signature is to be recorded in the database.
   */
  async authenticate(
    req: SignedRequest,
    options: { provisional?: boolean; recordInStatement?: boolean } = {},
  ): Promise<AuthResult> {
    const { partnerId, timestamp, signature } = req;
    if (partnerId === undefined || timestamp === undefined || signature === undefined) {
      return fail("missing_header");
    }
    if (Array.isArray(partnerId) || Array.isArray(timestamp) || Array.isArray(signature)) {
      return fail("duplicate_header");
    }
    // Either case is accepted: PostgreSQL matches a UUID whatever its case.
    if (!isUuid(partnerId.toLowerCase())) return fail("bad_partner_id");
    if (!/^[0-9]{13}$/.test(timestamp)) return fail("bad_timestamp");
    if (!checkTimestamp(timestamp, this.#clock.nowMs())) return fail("stale_timestamp");
    const sigBytes = decodeSignature(signature);
    if (sigBytes === null) return fail("bad_signature_encoding");
    const path = canonicalPath(req.target);
    if (path === null) return fail("bad_path");
    if (!req.routed) return fail("path_not_routed");

    const id = partnerId.toLowerCase();
    const canonical = canonicalString({ timestamp, method: req.method, path, body: req.body ?? "" });
    const expiresAtMs = Number(timestamp) + limits.timestampWindowMs + 1_000;
    const expiresAtIso = stateChanging.has(req.method) ? isoFromMs(expiresAtMs) : null;

    // Every request reads the partner's row and active keys, so that a disable, a key added or
    // retired, or a new allow-list takes effect at once in every process: in a statement of its
    // own, or, for a provisional read, in the read's own statement (CredentialCheck). A state-changing request
    // also records its signature in that same statement (in Redis instead, when REDIS_URL is set
    // and Redis answers); for that the signature is judged first,
    // by the credentials this process last read, and the statement records it only if the row
    // still holds them.
    let partner = this.#credentials.get(id);
    let current = false;
    if (partner === undefined) {
      partner = (await readCredentials(this.#db, id)).partner;
      this.#remember(id, partner);
      current = true;
    }
    let early: AuthResult | undefined;
    if (!current && expiresAtIso === null && options.provisional === true) {
      early = this.#judge(partner, canonical, sigBytes, req.clientIp);
      if (early.ok) {
        const judgedBy = partner;
        const accepted = early;
        const pending = new CredentialCheck(
          id,
          (seen, text) => {
            this.#remember(id, seen);
            const kept = this.#credentials.get(id);
            if (text !== undefined && kept !== undefined) {
              if (this.#witnessedText.size >= 10_000) this.#witnessedText.clear();
              this.#witnessedText.set(id, { text, kept });
            }
            if (seen !== undefined && sameCredentials(seen, judgedBy)) return withLimits(accepted, seen);
            return this.#judge(seen, canonical, sigBytes, req.clientIp);
          },
          async () => (await readCredentials(this.#db, id)).partner,
          // The text of the credentials this request was judged by, still the ones kept: the
          // statement saw them unchanged, budgets included.
          (value) => {
            const witnessed = this.#witnessedText.get(id);
            return witnessed !== undefined &&
              witnessed.text === value &&
              witnessed.kept === judgedBy &&
              this.#credentials.get(id) === judgedBy
              ? withLimits(accepted, judgedBy)
              : undefined;
          },
        );
        return { ...accepted, pending };
      }
      // Refused by what this process kept: judged again by the row, below, with this judgement.
    }
    if (
      !current &&
      partner !== undefined &&
      expiresAtIso !== null &&
      options.recordInStatement === true &&
      this.#recordInDatabase()
    ) {
      early = this.#judge(partner, canonical, sigBytes, req.clientIp);
      if (early.ok) {
        const pending = new SignedWrite(early, { signature: sigBytes, expiresAtIso, judgedBy: partner }, () =>
          this.authenticate(req),
        );
        return { ...early, pending };
      }
      // Refused by what this process kept: judged again by the row, below, with this judgement.
    }
    for (let round = 0; round < 3; round++) {
      // Verified even when the partner is unknown (against a stand-in key): an unknown partner
      // costs one statement and three verifications, as a refused known one does.
      const judged =
        round === 0 && early !== undefined ? early : this.#judge(partner, canonical, sigBytes, req.clientIp);
      if (current && (!judged.ok || expiresAtIso === null)) return judged;
      const inDatabase = expiresAtIso !== null && this.#recordInDatabase();
      const record =
        judged.ok && partner !== undefined && expiresAtIso !== null && inDatabase
          ? { signature: sigBytes, expiresAtIso, judgedBy: partner }
          : undefined;
      // A row read a moment ago by this request need not be read again unless it records.
      const read =
        current && record === undefined
          ? { partner, recorded: false }
          : await readCredentials(this.#db, id, record);
      if (!sameCredentials(read.partner, partner)) {
        // Changed since this process last read it: judge again by the row as it is now.
        partner = read.partner;
        this.#remember(id, partner);
        current = true;
        continue;
      }
      // Kept with the budgets as the row holds them now, which a SignedWrite's statement checks.
      if (!current && read.partner !== undefined && !sameBudgets(read.partner, partner!)) {
        this.#remember(id, read.partner);
      }
      // The budgets as the row holds them now (they do not change the judgement).
      const judgedNow = judged.ok && read.partner !== undefined ? withLimits(judged, read.partner) : judged;
      if (!judgedNow.ok || expiresAtIso === null) return judgedNow;
      if (record !== undefined && !read.recorded) return fail("replay");
      if (this.#shared === null) return judgedNow;
      const shared = await this.#recordShared(id, sigBytes, expiresAtMs);
      if (shared === "replay") return fail("replay");
      if (shared === "recorded" || record !== undefined) return judgedNow;
      // Redis failed on this very request: the database records it instead.
      this.#databaseGuardUntilMs = this.#clock.nowMs() + limits.timestampWindowMs + 1_000;
      const again = await readCredentials(this.#db, id, {
        signature: sigBytes,
        expiresAtIso,
        judgedBy: partner!,
      });
      if (!sameCredentials(again.partner, partner)) {
        partner = again.partner;
        this.#remember(id, partner);
        current = true;
        continue;
      }
      return again.recorded ? judgedNow : fail("replay");
    }
    // The row changed under every read: refuse rather than loop.
    return fail("partner_changing");
  }

  /** Whether a state-changing request is recorded in the database (no Redis, or Redis away). */
  #recordInDatabase(): boolean {
    if (this.#shared === null) return true;
    if (!this.#shared.available) {
      this.#databaseGuardUntilMs = this.#clock.nowMs() + limits.timestampWindowMs + 1_000;
      return true;
    }
    return this.#clock.nowMs() < this.#databaseGuardUntilMs;
  }

  /** Records an accepted signature in Redis until its window closes (SET NX PX: one atomic call). */
  async #recordShared(
    partnerId: string,
    sigBytes: Buffer,
    expiresAtMs: number,
  ): Promise<"recorded" | "replay" | "unavailable"> {
    const ttlMs = Math.max(1_000, expiresAtMs - this.#clock.nowMs());
    const key = `counterpart:sig:${partnerId}:${sigBytes.toString("base64")}`;
    const answer = await this.#shared!.run((redis) => redis.set(key, "1", "PX", ttlMs, "NX"));
    if (answer === unavailable) return "unavailable";
    return answer === "OK" ? "recorded" : "replay";
  }

  /** Judges a request by a partner's credentials, without the replay guard. */
  #judge(
    partner: PartnerCredentials | undefined,
    canonical: string,
    sigBytes: Buffer,
    clientIp: string,
  ): AuthResult {
    const keys: VerifyKey[] = [];
    for (const pem of partner?.public_keys ?? []) {
      const key = this.#key(pem);
      if (key !== null) keys.push(key);
    }
    // Stops at the key that verifies; a refusal verifies every slot, padded with the stand-in key,
    // so that every refusal costs the same.
    const message = Buffer.from(canonical, "utf8");
    let verified = false;
    const slots = Math.max(verificationsPerRequest, keys.length);
    for (let i = 0; i < slots && !verified; i++) {
      verified = this.#verifier.verify(keys[i] ?? this.#standInKey, message, sigBytes) && i < keys.length;
    }
    if (partner === undefined) return fail("unknown_partner");
    if (!partner.active) return fail("inactive_partner");
    if (keys.length === 0) return fail("no_public_key");
    if (!this.#ipAllowed(partner.allowed_ips, clientIp)) return fail("ip_not_allowed");
    if (!verified) return fail("signature_mismatch");
    return withLimits({ ok: true, partnerId: partner.id, rateLimits: noOverrides }, partner);
  }

  #remember(id: string, partner: PartnerCredentials | undefined): void {
    // Only partners that exist are kept, so unknown ids sent at random cannot fill the map.
    if (partner === undefined) {
      this.#credentials.delete(id);
      this.#witnessedText.delete(id);
      return;
    }
    // A row read again as it was (every witnessed read sees it) leaves the kept object in place,
    // and with it what was derived from it: the allow-list's parsed ranges, kept by the list.
    const kept = this.#credentials.get(id);
    if (kept !== undefined && sameCredentials(kept, partner) && sameBudgets(kept, partner)) return;
    // Frozen: what is derived from it is kept by identity, so it must never change in place.
    Object.freeze(partner.public_keys);
    Object.freeze(partner.allowed_ips);
    Object.freeze(partner);
    if (this.#credentials.size >= 10_000) this.#credentials.clear();
    this.#credentials.set(id, partner);
  }

  #key(pem: string): VerifyKey | null {
    let key = this.#keys.get(pem);
    if (key === undefined) {
      const parsed = parsePublicKey(pem);
      if (!parsed.ok) return null;
      key = verifyKeyOf(parsed.key);
      if (this.#keys.size > 10_000) this.#keys.clear();
      this.#keys.set(pem, key);
    }
    return key;
  }

  #ipAllowed(allowed: string[], clientIp: string): boolean {
    if (allowed.length === 0) return false;
    const ip = this.#clientAddress(clientIp);
    if (ip === null) return false;
    let ranges = this.#allowLists.get(allowed);
    if (ranges === undefined) {
      // An entry not in the plain form (an IPv4 address with a leading zero, or short, hex or one
      // number) matches nothing: it may have been stored before such entries were refused, and
      // it names another host than it shows (isCidrOrIp).
      ranges = allowed.filter(isCidrOrIp).map(parseRange);
      this.#allowLists.set(allowed, ranges);
    }
    return ranges.some(([range, bits]) => range.kind() === ip.kind() && ip.match(range, bits));
  }

  #clientAddress(text: string): ipaddr.IPv4 | ipaddr.IPv6 | null {
    let ip = this.#clientAddresses.get(text);
    if (ip === undefined) {
      ip = ipaddr.isValid(text) ? normaliseIp(text) : null;
      if (this.#clientAddresses.size >= 10_000) this.#clientAddresses.clear();
      this.#clientAddresses.set(text, ip);
    }
    return ip;
  }
}

function sameCredentials(a: PartnerCredentials | undefined, b: PartnerCredentials | undefined): boolean {
  if (a === undefined || b === undefined) return a === b;
  return (
    a.id === b.id &&
    a.active === b.active &&
    a.public_keys.length === b.public_keys.length &&
    a.public_keys.every((pem, i) => pem === b.public_keys[i]) &&
    a.allowed_ips.length === b.allowed_ips.length &&
    a.allowed_ips.every((ip, i) => ip === b.allowed_ips[i])
  );
}

function sameBudgets(a: PartnerCredentials, b: PartnerCredentials): boolean {
  return (
    a.rate_limit_reads === b.rate_limit_reads &&
    a.rate_limit_writes === b.rate_limit_writes &&
    a.rate_limit_quotes === b.rate_limit_quotes
  );
}

let chosenByDefault: SignatureVerifier | undefined;

/** SIGNATURE_VERIFIER's default (auto), chosen once per process. */
function defaultVerifier(): SignatureVerifier {
  chosenByDefault ??= chooseVerifier("auto").verifier;
  return chosenByDefault;
}

const noOverrides: RateLimitOverrides = { reads: null, writes: null, quotes: null };

function withLimits(result: AuthResult & { ok: true }, partner: PartnerCredentials): AuthResult {
  return {
    ...result,
    rateLimits: {
      reads: partner.rate_limit_reads,
      writes: partner.rate_limit_writes,
      quotes: partner.rate_limit_quotes,
    },
  };
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
