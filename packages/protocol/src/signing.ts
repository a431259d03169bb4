// Request signing for the partner interface (section 5 of the contract).
//
// This module is the single definition of how a partner request is signed,
// shared by both sides: the server uses it to verify X-Signature, the SDK/CLI
// uses it to produce the X-Partner-ID / X-Timestamp / X-Signature headers.
// Keeping both directions in one place is what guarantees that the bytes the
// client signs are the bytes the server checks; any change here is a protocol
// change and must stay compatible with partners' own implementations.
//
// Canonical string = TIMESTAMP + METHOD + PATH + BODY_HASH, no separators,
// signed with Ed25519 over its UTF-8 bytes, sent as standard padded Base64.
//
// Only node:crypto is used (Ed25519 via OpenSSL, KeyObject).

import {
  createHash,
  createPrivateKey,
  createPublicKey,
  generateKeyPairSync,
  type KeyObject,
  sign,
  timingSafeEqual,
  verify,
} from "node:crypto";

/** Maximum accepted age of X-Timestamp, in milliseconds (inclusive). */
export const TIMESTAMP_WINDOW_MS = 60_000;

/** Length in bytes of an Ed25519 signature. */
const SIGNATURE_BYTES = 64;

/** Length in bytes of a raw Ed25519 public key. */
const PUBLIC_KEY_BYTES = 32;

// DER prefix of an Ed25519 SubjectPublicKeyInfo (RFC 8410): SEQUENCE {
// SEQUENCE { OID 1.3.101.112 }, BIT STRING (33 bytes, 0 unused bits) }.
// Every Ed25519 SPKI is exactly this header followed by the 32 raw key bytes,
// so checking it lets us extract the raw key without an ASN.1 parser.
const ED25519_SPKI_PREFIX = Buffer.from("302a300506032b6570032100", "hex");

export type SignatureHeaders = {
  "X-Partner-ID": string;
  "X-Timestamp": string;
  "X-Signature": string;
};

export type ParsedPublicKey =
  | { ok: true; key: KeyObject; pem: string }
  | { ok: false; reason: "not_pem" | "not_ed25519" | "small_order" };

/**
 * Compares two byte strings without throwing: crypto.timingSafeEqual throws
 * on unequal lengths, which would turn a malformed input into an exception
 * (and a 500) instead of a plain "no match". Lengths are not secret here, so
 * an early false on length mismatch leaks nothing useful.
 */
export function safeEqual(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  return timingSafeEqual(a, b);
}

/** A target an HTTP client sends: origin-form, visible ASCII, no "#". */
const signableTarget = /^\/[\x21-\x22\x24-\x7e]*$/;

/**
 * Canonical PATH of a raw request target, or null if the target is not in
 * origin-form (does not start with "/": absolute-form "http://host/x",
 * asterisk-form "*", empty string).
 *
 * Both sides must derive the canonical path from the exact bytes on the wire,
 * so nothing is normalised: no percent-decoding (so "%2F" and "/" differ), no
 * "." / ".." resolution, no folding of repeated slashes, case kept, trailing
 * slash kept. Any normalisation would let two different requests share a
 * signature, or make a client and server that normalise differently disagree.
 *
 * The query is what follows the FIRST "?". It is split on "&" into pieces
 * ("name=value" or bare "name", still percent-encoded as sent) which are
 * sorted by name (the text before the first "="), comparing UTF-16 code
 * units with "<" so the order does not depend on locale. The sort is stable:
 * pieces with the same name keep their original relative order, because for
 * repeated parameters ("?status=b&status=a") order can be meaningful to the
 * application and must stay covered by the signature.
 *
 * Empty pieces (from "&&", a leading or trailing "&") are dropped, and an
 * empty query ("/x?" or "/x?&") yields the path alone: such requests carry
 * the same parameters, and HTTP clients differ in whether they emit a bare
 * "?", so treating them alike avoids spurious signature mismatches.
 *
 * Only a target an HTTP client sends can be signed: origin-form, visible
 * ASCII only (anything else is percent-encoded; a raw byte would reach the
 * server reinterpreted, not as the bytes signed), and no "#", which clients
 * never send and routers drop with what follows it. Any other target is null:
 * the signer refuses it and the service answers 401.
 */
export function canonicalPath(rawTarget: string): string | null {
  if (typeof rawTarget !== "string" || !signableTarget.test(rawTarget)) return null;
  const q = rawTarget.indexOf("?");
  if (q === -1) return rawTarget;
  const path = rawTarget.slice(0, q);
  const pieces = rawTarget
    .slice(q + 1)
    .split("&")
    .filter((piece) => piece !== "");
  if (pieces.length === 0) return path;
  // Array.prototype.sort is required to be stable since ES2019.
  const keyed = pieces.map((piece) => {
    const eq = piece.indexOf("=");
    return { name: eq === -1 ? piece : piece.slice(0, eq), piece };
  });
  keyed.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  return `${path}?${keyed.map((k) => k.piece).join("&")}`;
}

/** SHA-256 of zero bytes, in lowercase hex (FIPS 180-4's test vector for the empty message). */
const EMPTY_BODY_HASH = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

/**
 * Lowercase hex SHA-256 of the body bytes exactly as sent. A string is
 * UTF-8 encoded first; no body hashes as the empty string, so a request
 * without a body still has a fixed-width BODY_HASH.
 */
export function bodyHash(body: Uint8Array | string | undefined): string {
  // Every GET's: the hash of no bytes, known without hashing.
  if (body === undefined || body.length === 0) return EMPTY_BODY_HASH;
  const hash = createHash("sha256");
  if (typeof body === "string") hash.update(body, "utf8");
  else if (body !== undefined) hash.update(body);
  return hash.digest("hex");
}

/**
 * TIMESTAMP + METHOD (uppercased) + PATH + BODY_HASH with no separators.
 * `path` must already be the output of canonicalPath(); it is not
 * re-canonicalised here so that the caller decides what to do with targets
 * canonicalPath() rejects.
 */
export function canonicalString(p: {
  timestamp: string;
  method: string;
  path: string;
  body?: Uint8Array | string | undefined;
}): string {
  return p.timestamp + p.method.toUpperCase() + p.path + bodyHash(p.body);
}

const TIMESTAMP_PATTERN = /^[0-9]{13}$/;

/**
 * True when X-Timestamp is exactly 13 decimal digits (Unix ms; rejects
 * signs, spaces, exponents and other forms Number() would accept) and is at
 * most TIMESTAMP_WINDOW_MS old: 0 <= now - timestamp <= window, inclusive.
 * Timestamps in the future are refused outright; clients sign with their
 * own clock immediately before sending, so a future value means a skewed or
 * forged clock, and allowing it would extend the replay window.
 */
export function checkTimestamp(value: string, nowMs: number): boolean {
  if (typeof value !== "string" || !TIMESTAMP_PATTERN.test(value)) return false;
  if (!Number.isFinite(nowMs)) return false;
  // 13 digits < 2^53, so the conversion is exact.
  const age = nowMs - Number(value);
  return age >= 0 && age <= TIMESTAMP_WINDOW_MS;
}

/**
 * Decodes X-Signature, or null unless it is the one canonical standard
 * Base64 encoding (with padding) of exactly 64 bytes. Buffer.from(_,
 * "base64") is lenient (accepts the url-safe alphabet, missing padding,
 * whitespace, stops at junk), so the decoded bytes are re-encoded and
 * compared to the input: that single check rejects every alternative
 * spelling, including non-zero trailing bits, and keeps the header format
 * exactly as the contract states.
 */
export function decodeSignature(value: string): Buffer | null {
  if (typeof value !== "string") return null;
  const bytes = Buffer.from(value, "base64");
  if (bytes.length !== SIGNATURE_BYTES) return null;
  if (bytes.toString("base64") !== value) return null;
  return bytes;
}

/**
 * Every 32-byte string that decodes to a point of small order (dividing 8)
 * on edwards25519, as hex. A public key of small order lets a signature
 * verify for many messages (or, for the identity, trivially), so such keys
 * are refused at registration time.
 *
 * This is libsodium's has_small_order blocklist (7 y-coordinates: 0, 1,
 * p-1, the two order-8 y values, and the non-canonical p = 0 and p+1 = 1),
 * each with the x sign bit (bit 255) clear and set. libsodium masks the
 * sign bit when comparing; listing both variants explicitly makes the
 * blocklist a plain lookup. The variants with the sign bit set cover the
 * non-canonical "x = 0 with sign 1" encodings too.
 */
export const SMALL_ORDER_ENCODINGS: readonly string[] = (() => {
  const ys = [
    // 0 (order 4)
    "0000000000000000000000000000000000000000000000000000000000000000",
    // 1 (order 1, the identity)
    "0100000000000000000000000000000000000000000000000000000000000000",
    // 2707385501144840649318225287225658788936804267575313519463743609750303402022 (order 8)
    "26e8958fc2b227b045c3f489f2ef98f0d5dfac05d3c63339b13802886d53fc05",
    // 55188659117513257062467267217118295137698188065244968500265048394206261417927 (order 8)
    "c7176a703d4dd84fba3c0b760d10670f2a2053fa2c39ccc64ec7fd7792ac037a",
    // p - 1 (order 2)
    "ecffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f",
    // p, non-canonical 0 (order 4)
    "edffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f",
    // p + 1, non-canonical 1 (order 1)
    "eeffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f",
  ];
  const all: string[] = [];
  for (const y of ys) {
    all.push(y);
    const withSign = Buffer.from(y, "hex");
    withSign[31] = (withSign[31] as number) | 0x80;
    all.push(withSign.toString("hex"));
  }
  return Object.freeze(all);
})();

const SMALL_ORDER_BYTES: readonly Buffer[] = SMALL_ORDER_ENCODINGS.map((h) => Buffer.from(h, "hex"));

/** True when the raw 32-byte Ed25519 public key is a small-order encoding. */
export function isSmallOrderPublicKey(raw: Uint8Array): boolean {
  let found = false;
  // Check every entry rather than returning early; public keys are not
  // secret, but there is no reason for the cost to depend on the input.
  for (const bad of SMALL_ORDER_BYTES) {
    if (safeEqual(raw, bad)) found = true;
  }
  return found;
}

// A single PEM block labelled PUBLIC KEY (SubjectPublicKeyInfo) and nothing
// else. This is checked before handing the text to OpenSSL because
// createPublicKey() also accepts private keys and certificates (deriving the
// public key) and ignores text after the first block; a partner who pastes
// their private key must be told it is wrong, not have it silently accepted.
const SPKI_PEM_PATTERN = /^-----BEGIN PUBLIC KEY-----\r?\n[A-Za-z0-9+/=\r\n]+-----END PUBLIC KEY-----$/;

/**
 * Parses a partner's public key: an Ed25519 SubjectPublicKeyInfo PEM
 * ("-----BEGIN PUBLIC KEY-----"), surrounding whitespace ignored.
 * - not_pem: not exactly one PUBLIC KEY PEM block, or undecodable;
 * - not_ed25519: a valid SPKI for another algorithm (RSA, EC, Ed448...);
 * - small_order: an Ed25519 key from SMALL_ORDER_ENCODINGS.
 * On success `pem` is the key re-exported by OpenSSL, a normalised form
 * suitable for storage and comparison.
 */
export function parsePublicKey(pem: string): ParsedPublicKey {
  if (typeof pem !== "string") return { ok: false, reason: "not_pem" };
  const text = pem.trim();
  if (!SPKI_PEM_PATTERN.test(text)) return { ok: false, reason: "not_pem" };
  let key: KeyObject;
  try {
    key = createPublicKey({ key: text, format: "pem" });
  } catch {
    return { ok: false, reason: "not_pem" };
  }
  if (key.type !== "public" || key.asymmetricKeyType !== "ed25519") {
    return { ok: false, reason: "not_ed25519" };
  }
  const der = key.export({ type: "spki", format: "der" });
  if (
    der.length !== ED25519_SPKI_PREFIX.length + PUBLIC_KEY_BYTES ||
    !der.subarray(0, ED25519_SPKI_PREFIX.length).equals(ED25519_SPKI_PREFIX)
  ) {
    // OpenSSL says ed25519 but the encoding is not the RFC 8410 one; refuse
    // rather than guess where the key bytes are.
    return { ok: false, reason: "not_ed25519" };
  }
  if (isSmallOrderPublicKey(der.subarray(ED25519_SPKI_PREFIX.length))) {
    return { ok: false, reason: "small_order" };
  }
  return { ok: true, key, pem: key.export({ type: "spki", format: "pem" }) as string };
}

/**
 * Ed25519 verification of the canonical string's UTF-8 bytes. Never throws:
 * a wrong key type, a malformed signature or an OpenSSL error all mean
 * "not verified", and the server must answer 401, not 500.
 */
export function verifySignature(key: KeyObject, canonical: string, signature: Buffer): boolean {
  try {
    if (key.type !== "public" || key.asymmetricKeyType !== "ed25519") return false;
    if (signature.length !== SIGNATURE_BYTES) return false;
    return verify(null, Buffer.from(canonical, "utf8"), key, signature);
  } catch {
    return false;
  }
}

/**
 * Produces the three authentication headers for a request. `target` is the
 * path plus raw query exactly as it will be sent; it is canonicalised here
 * so the caller cannot sign one form and send another. `nowMs` is passed in
 * (usually Date.now()) to keep signing deterministic and testable.
 * Throws on programming errors (bad key, non-origin-form target, clock value
 * that is not a 13-digit ms timestamp), since those would never verify.
 */
export function signRequest(p: {
  partnerId: string;
  privateKey: KeyObject | string;
  method: string;
  target: string;
  body?: Uint8Array | string | undefined;
  nowMs: number;
}): SignatureHeaders {
  const key = typeof p.privateKey === "string" ? createPrivateKey(p.privateKey) : p.privateKey;
  if (key.type !== "private" || key.asymmetricKeyType !== "ed25519") {
    throw new TypeError("signRequest: privateKey must be an Ed25519 private key");
  }
  const path = canonicalPath(p.target);
  if (path === null) {
    throw new TypeError(
      `signRequest: target must start with "/" and be visible ASCII without "#" (percent-encode the rest): ${JSON.stringify(p.target)}`,
    );
  }
  const timestamp = String(p.nowMs);
  if (!Number.isSafeInteger(p.nowMs) || !TIMESTAMP_PATTERN.test(timestamp)) {
    throw new RangeError(`signRequest: nowMs must be a 13-digit Unix time in ms, got ${p.nowMs}`);
  }
  const canonical = canonicalString({ timestamp, method: p.method, path, body: p.body });
  const signature = sign(null, Buffer.from(canonical, "utf8"), key);
  return {
    "X-Partner-ID": p.partnerId,
    "X-Timestamp": timestamp,
    "X-Signature": signature.toString("base64"),
  };
}

/**
 * New Ed25519 key pair as PEM: SPKI public key (what the partner registers)
 * and unencrypted PKCS#8 private key (what the partner keeps).
 */
export function generateKeyPair(): { publicKeyPem: string; privateKeyPem: string } {
  const { publicKey, privateKey } = generateKeyPairSync("ed25519", {
    publicKeyEncoding: { type: "spki", format: "pem" },
    privateKeyEncoding: { type: "pkcs8", format: "pem" },
  });
  return { publicKeyPem: publicKey, privateKeyPem: privateKey };
}
