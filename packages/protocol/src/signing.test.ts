import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import {
  createHash,
  createPrivateKey,
  createPublicKey,
  generateKeyPairSync,
  type KeyObject,
} from "node:crypto";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, test } from "node:test";
import {
  bodyHash,
  canonicalPath,
  canonicalString,
  checkTimestamp,
  decodeSignature,
  generateKeyPair,
  isSmallOrderPublicKey,
  parsePublicKey,
  SMALL_ORDER_ENCODINGS,
  safeEqual,
  signRequest,
  TIMESTAMP_WINDOW_MS,
  verifySignature,
} from "./signing.ts";

const NOW = 1_700_000_000_000;
const PARTNER_ID = "3f1c2b9e-8a4d-4c1e-9b7a-2d5e6f708192";
const EMPTY_SHA256 = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
const SPKI_HEADER = "302a300506032b6570032100";

/** SPKI PEM for arbitrary raw 32 bytes, bypassing any key validation. */
function pemForRawKey(rawHex: string): string {
  const der = Buffer.from(SPKI_HEADER + rawHex, "hex");
  const body = der.toString("base64").replace(/.{1,64}/g, "$&\n");
  return `-----BEGIN PUBLIC KEY-----\n${body}-----END PUBLIC KEY-----\n`;
}

/** What the server does: canonicalise the received request and verify. */
function serverVerifies(
  publicKey: KeyObject,
  headers: { "X-Timestamp": string; "X-Signature": string },
  req: { method: string; target: string; body?: Uint8Array | string },
): boolean {
  const path = canonicalPath(req.target);
  const sig = decodeSignature(headers["X-Signature"]);
  if (path === null || sig === null) return false;
  const canonical = canonicalString({
    timestamp: headers["X-Timestamp"],
    method: req.method,
    path,
    body: req.body,
  });
  return verifySignature(publicKey, canonical, sig);
}

describe("canonicalPath", () => {
  const cases: [string, string | null][] = [
    [
      "/v1/partner/orders?status=completed&page=2&source=bank",
      "/v1/partner/orders?page=2&source=bank&status=completed",
    ],
    // Repeated names keep their relative order (stable sort).
    ["/v1/partner/orders?status=b&page=1&status=a", "/v1/partner/orders?page=1&status=b&status=a"],
    ["/x?b=2&a=1&b=1&a=2", "/x?a=1&a=2&b=2&b=1"],
    // Percent-encoding is preserved in path and query, never decoded.
    ["/v1/files/a%2Fb?q=%2F&p=a%20b", "/v1/files/a%2Fb?p=a%20b&q=%2F"],
    ["/v1/files/a%2fb", "/v1/files/a%2fb"],
    // Case-sensitive, trailing slash significant, no dot/slash normalisation.
    ["/v1/Orders", "/v1/Orders"],
    ["/v1/orders/", "/v1/orders/"],
    ["/v1/orders", "/v1/orders"],
    ["/v1//orders/../x/./y", "/v1//orders/../x/./y"],
    ["/", "/"],
    // Only the first "?" splits; later "?" belong to the query.
    ["/x?b=?&a=1?2", "/x?a=1?2&b=?"],
    // Name is the text before the first "="; bare names allowed.
    ["/x?b&a=1=2&c=", "/x?a=1=2&b&c="],
    // Plain code-unit order: uppercase before lowercase, "a" before "a_" / "aa".
    ["/x?b=1&B=1&aa=1&a=1&a_=1", "/x?B=1&a=1&a_=1&aa=1&b=1"],
    // Empty query and empty pieces are dropped.
    ["/x?", "/x"],
    ["/x?&", "/x"],
    ["/x?&&b=1&&a=1&", "/x?a=1&b=1"],
    // Not origin-form.
    ["http://x/y", null],
    ["https://host/v1/orders?a=1", null],
    ["*", null],
    ["", null],
    ["v1/orders", null],
    ["?a=1", null],
    // Not what an HTTP client sends: a fragment, a raw space, control or non-ASCII character.
    ["/v1/partner/asset-pairs#x", null],
    ["/x?a=1#frag", null],
    ["/x y", null],
    ["/x?a=b c", null],
    ["/x\u0000", null],
    ["/x\u007f", null],
    ["/caf\u00e9", null],
  ];
  for (const [input, expected] of cases) {
    test(`${JSON.stringify(input)} -> ${JSON.stringify(expected)}`, () => {
      assert.equal(canonicalPath(input), expected);
    });
  }

  test("is idempotent", () => {
    for (const [input] of cases) {
      const once = canonicalPath(input);
      if (once !== null) assert.equal(canonicalPath(once), once);
    }
  });
});

describe("bodyHash", () => {
  test("no body and empty bodies hash as the empty string", () => {
    assert.equal(bodyHash(undefined), EMPTY_SHA256);
    assert.equal(bodyHash(""), EMPTY_SHA256);
    assert.equal(bodyHash(new Uint8Array(0)), EMPTY_SHA256);
    // The constant an empty body is answered with is the hash of no bytes.
    assert.equal(EMPTY_SHA256, createHash("sha256").digest("hex"));
  });

  test("known vector, lowercase hex", () => {
    assert.equal(bodyHash("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  });

  test("strings are UTF-8 encoded; bytes are hashed as given", () => {
    const text = '{"name":"Zoë €"}';
    assert.equal(bodyHash(text), bodyHash(Buffer.from(text, "utf8")));
    assert.equal(bodyHash(new Uint8Array([0xff, 0x00])), bodyHash(Buffer.from([0xff, 0x00])));
    assert.notEqual(bodyHash(text), bodyHash(Buffer.from(text, "latin1")));
  });
});

describe("canonicalString", () => {
  test("concatenates without separators and uppercases the method", () => {
    const s = canonicalString({
      timestamp: "1700000000000",
      method: "post",
      path: "/v1/orders?a=1",
      body: "abc",
    });
    assert.equal(
      s,
      "1700000000000POST/v1/orders?a=1ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad",
    );
  });

  test("no body uses the empty-string hash", () => {
    assert.equal(
      canonicalString({ timestamp: "1700000000000", method: "GET", path: "/v1/orders" }),
      `1700000000000GET/v1/orders${EMPTY_SHA256}`,
    );
  });
});

describe("checkTimestamp", () => {
  test("window constant", () => {
    assert.equal(TIMESTAMP_WINDOW_MS, 60_000);
  });

  const cases: [string, string, boolean][] = [
    ["exactly now", String(NOW), true],
    ["now - 1", String(NOW - 1), true],
    ["now - 60000 (edge, inclusive)", String(NOW - 60_000), true],
    ["now - 60001", String(NOW - 60_001), false],
    ["now + 1 (future)", String(NOW + 1), false],
    ["12 digits", String(NOW).slice(0, 12), false],
    ["14 digits", `0${NOW}`, false],
    ["leading plus", `+${String(NOW).slice(1)}`, false],
    ["leading space", ` ${String(NOW).slice(1)}`, false],
    ["trailing space", `${String(NOW)} `, false],
    ["trailing newline", `${String(NOW)}\n`, false],
    ["decimal point", `${String(NOW).slice(0, 12)}.`, false],
    ["exponent", "1.7000000e+12", false],
    ["hex", "0x18bcfe56800", false],
    ["non-ASCII digits", "١٧٠٠٠٠٠٠٠٠٠٠٠", false],
    ["empty", "", false],
  ];
  for (const [name, value, expected] of cases) {
    test(`${name}: ${JSON.stringify(value)} -> ${expected}`, () => {
      assert.equal(checkTimestamp(value, NOW), expected);
    });
  }

  test("non-finite clock never accepts", () => {
    assert.equal(checkTimestamp(String(NOW), Number.NaN), false);
    assert.equal(checkTimestamp(String(NOW), Number.POSITIVE_INFINITY), false);
  });
});

describe("decodeSignature", () => {
  // 64 bytes chosen so the standard encoding contains both "+" and "/".
  const bytes = Buffer.alloc(64, 0xfb);
  bytes[0] = 0xff;
  bytes[63] = 0x3e;
  const valid = bytes.toString("base64");
  const B64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

  test("fixture sanity", () => {
    assert.equal(valid.length, 88);
    assert.ok(valid.endsWith("=="));
    assert.ok(valid.includes("+") && valid.includes("/"));
    // The last data char carries 2 bits of the last byte and 4 zero bits.
    assert.equal(B64.indexOf(valid[85]!) & 0x0f, 0);
    assert.deepEqual(
      Buffer.from(`${valid.slice(0, 85)}${B64[B64.indexOf(valid[85]!) + 1]}==`, "base64"),
      bytes,
    );
  });

  test("valid 88-char padded standard Base64 -> 64 bytes", () => {
    const decoded = decodeSignature(valid);
    assert.ok(decoded);
    assert.equal(decoded.length, 64);
    assert.deepEqual(decoded, bytes);
  });

  const rejects: [string, string][] = [
    ["url-safe alphabet", valid.replaceAll("+", "-").replaceAll("/", "_")],
    ["url-safe without padding", bytes.toString("base64url")],
    ["no padding", valid.replace(/=+$/, "")],
    ["single padding char", valid.slice(0, -1)],
    ["extra padding", `${valid}=`],
    ["trailing newline", `${valid}\n`],
    ["leading space", ` ${valid}`],
    ["space inside", `${valid.slice(0, 40)} ${valid.slice(40)}`],
    ["newline inside", `${valid.slice(0, 44)}\n${valid.slice(44)}`],
    ["trailing junk", `${valid}AA`],
    ["junk char", `${valid.slice(0, 10)}*${valid.slice(11)}`],
    // Same bytes, but one of the 4 unused low bits of the last data char set:
    // lenient decoders accept it, the canonical re-encoding differs.
    ["non-zero trailing bits", `${valid.slice(0, 85)}${B64[B64.indexOf(valid[85]!) + 1]}==`],
    ["63-byte payload", Buffer.alloc(63, 1).toString("base64")],
    ["65-byte payload", Buffer.alloc(65, 1).toString("base64")],
    ["empty", ""],
  ];
  for (const [name, value] of rejects) {
    test(`rejects ${name}`, () => {
      assert.notEqual(value, valid);
      assert.equal(decodeSignature(value), null);
    });
  }
});

describe("safeEqual", () => {
  test("never throws on unequal lengths", () => {
    assert.equal(safeEqual(Buffer.from("ab"), Buffer.from("abc")), false);
    assert.equal(safeEqual(new Uint8Array(0), new Uint8Array(1)), false);
  });
  test("compares contents", () => {
    assert.equal(safeEqual(Buffer.from("abc"), Buffer.from("abc")), true);
    assert.equal(safeEqual(Buffer.from("abc"), Buffer.from("abd")), false);
    assert.equal(safeEqual(new Uint8Array(0), new Uint8Array(0)), true);
  });
});

// Independent check of the blocklist with plain BigInt arithmetic on
// edwards25519 (-x^2 + y^2 = 1 + d x^2 y^2), so a mistyped byte in the list
// is caught instead of trusted.
const P = 2n ** 255n - 19n;
const mod = (a: bigint): bigint => ((a % P) + P) % P;
function pow(base: bigint, exp: bigint): bigint {
  let result = 1n;
  let b = mod(base);
  let e = exp;
  while (e > 0n) {
    if (e & 1n) result = (result * b) % P;
    b = (b * b) % P;
    e >>= 1n;
  }
  return result;
}
const inv = (a: bigint): bigint => pow(a, P - 2n);
const D = mod(-121665n * inv(121666n));
const SQRT_M1 = pow(2n, (P - 1n) / 4n);

/** Decodes 32 bytes to a curve point, reducing y mod p (lenient, like a non-strict verifier). */
function decodePoint(raw: Buffer): [bigint, bigint] | null {
  const sign = raw[31]! >> 7;
  const le = Buffer.from(raw);
  le[31] = le[31]! & 0x7f;
  const y = mod(BigInt(`0x${Buffer.from(le).reverse().toString("hex")}`));
  const u = mod(y * y - 1n);
  const v = mod(D * y * y + 1n);
  const x2 = mod(u * inv(v));
  let x = pow(x2, (P + 3n) / 8n);
  if (mod(x * x) !== x2) x = mod(x * SQRT_M1);
  if (mod(x * x) !== x2) return null;
  if (Number(x & 1n) !== sign) x = mod(-x);
  return [x, y];
}
function add([x1, y1]: [bigint, bigint], [x2, y2]: [bigint, bigint]): [bigint, bigint] {
  const t = mod(D * x1 * x2 * y1 * y2);
  return [mod((x1 * y2 + y1 * x2) * inv(1n + t)), mod((y1 * y2 + x1 * x2) * inv(mod(1n - t)))];
}
function timesEight(p: [bigint, bigint]): [bigint, bigint] {
  let q = p;
  for (let i = 0; i < 3; i++) q = add(q, q);
  return q;
}

describe("small-order blocklist", () => {
  test("has the 14 expected distinct 32-byte entries", () => {
    assert.equal(SMALL_ORDER_ENCODINGS.length, 14);
    assert.equal(new Set(SMALL_ORDER_ENCODINGS).size, 14);
    for (const hex of SMALL_ORDER_ENCODINGS) assert.match(hex, /^[0-9a-f]{64}$/);
  });

  test("every entry decodes to a point whose order divides 8", () => {
    for (const hex of SMALL_ORDER_ENCODINGS) {
      const point = decodePoint(Buffer.from(hex, "hex"));
      assert.ok(point, `${hex} is not on the curve`);
      assert.deepEqual(timesEight(point), [0n, 1n], `${hex} is not of small order`);
    }
  });

  test("covers all 8 torsion points in canonical form", () => {
    const canonical = new Set<string>();
    for (const hex of SMALL_ORDER_ENCODINGS) {
      const [x, y] = decodePoint(Buffer.from(hex, "hex"))!;
      canonical.add(`${x},${y}`);
    }
    assert.equal(canonical.size, 8);
  });

  test("the curve arithmetic itself is sane: the base point is not small order", () => {
    const base = Buffer.from("5866666666666666666666666666666666666666666666666666666666666666", "hex");
    const point = decodePoint(base);
    assert.ok(point);
    assert.notDeepEqual(timesEight(point), [0n, 1n]);
    assert.equal(isSmallOrderPublicKey(base), false);
  });

  test("isSmallOrderPublicKey: non-32-byte input does not throw", () => {
    assert.equal(isSmallOrderPublicKey(new Uint8Array(31)), false);
    assert.equal(isSmallOrderPublicKey(new Uint8Array(33)), false);
  });
});

describe("parsePublicKey", () => {
  test("accepts a generated key and returns a normalised PEM", () => {
    const { publicKeyPem } = generateKeyPair();
    const parsed = parsePublicKey(publicKeyPem);
    assert.equal(parsed.ok, true);
    assert.ok(parsed.ok);
    assert.equal(parsed.key.asymmetricKeyType, "ed25519");
    assert.equal(parsed.key.type, "public");
    assert.equal(parsed.pem, publicKeyPem);
  });

  test("tolerates surrounding whitespace and CRLF line endings", () => {
    const { publicKeyPem } = generateKeyPair();
    const crlf = `\n  ${publicKeyPem.replaceAll("\n", "\r\n")}  \n`;
    const parsed = parsePublicKey(crlf);
    assert.ok(parsed.ok);
    assert.equal(parsed.pem, publicKeyPem);
  });

  test("identity point -> small_order", () => {
    const identity = `01${"00".repeat(31)}`;
    assert.deepEqual(parsePublicKey(pemForRawKey(identity)), { ok: false, reason: "small_order" });
  });

  for (const hex of SMALL_ORDER_ENCODINGS) {
    test(`small-order key ${hex} -> small_order`, () => {
      assert.deepEqual(parsePublicKey(pemForRawKey(hex)), { ok: false, reason: "small_order" });
    });
  }

  test("a hand-built PEM for a valid key is accepted (the helper is not biased)", () => {
    const { publicKey } = generateKeyPairSync("ed25519");
    const raw = publicKey.export({ format: "jwk" }).x!;
    const parsed = parsePublicKey(pemForRawKey(Buffer.from(raw, "base64url").toString("hex")));
    assert.ok(parsed.ok);
  });

  const notEd25519: [string, () => string][] = [
    [
      "RSA",
      () =>
        generateKeyPairSync("rsa", { modulusLength: 2048 }).publicKey.export({
          type: "spki",
          format: "pem",
        }) as string,
    ],
    [
      "EC P-256",
      () =>
        generateKeyPairSync("ec", { namedCurve: "P-256" }).publicKey.export({
          type: "spki",
          format: "pem",
        }) as string,
    ],
    ["Ed448", () => generateKeyPairSync("ed448").publicKey.export({ type: "spki", format: "pem" }) as string],
    [
      "X25519",
      () => generateKeyPairSync("x25519").publicKey.export({ type: "spki", format: "pem" }) as string,
    ],
  ];
  for (const [name, make] of notEd25519) {
    test(`${name} -> not_ed25519`, () => {
      assert.deepEqual(parsePublicKey(make()), { ok: false, reason: "not_ed25519" });
    });
  }

  const ed = generateKeyPair();
  const notPem: [string, string][] = [
    ["garbage", "hello world"],
    ["empty", ""],
    ["raw base64 without armour", ed.publicKeyPem.split("\n")[1]!],
    ["Ed25519 private key PEM", ed.privateKeyPem],
    ["PKCS#1 RSA PUBLIC KEY label", ed.publicKeyPem.replaceAll("PUBLIC KEY", "RSA PUBLIC KEY")],
    ["two PEM blocks", ed.publicKeyPem + generateKeyPair().publicKeyPem],
    ["trailing text", `${ed.publicKeyPem}junk`],
    ["corrupt base64 body", "-----BEGIN PUBLIC KEY-----\nMCowBQYDK2VwAyEA\n-----END PUBLIC KEY-----\n"],
    ["invalid characters in body", ed.publicKeyPem.replace("MCow", "MC*w")],
  ];
  for (const [name, input] of notPem) {
    test(`${name} -> not_pem`, () => {
      assert.deepEqual(parsePublicKey(input), { ok: false, reason: "not_pem" });
    });
  }
});

describe("sign / verify round trip", () => {
  const { publicKeyPem, privateKeyPem } = generateKeyPair();
  const publicKey = createPublicKey(publicKeyPem);
  const request = {
    method: "POST",
    target: "/v1/partner/orders?status=completed&page=2",
    body: Buffer.from('{"amount":"10.00","note":"café"}', "utf8"),
  };
  const headers = signRequest({ partnerId: PARTNER_ID, privateKey: privateKeyPem, nowMs: NOW, ...request });

  test("produces the three headers in the contract's format", () => {
    assert.deepEqual(Object.keys(headers).sort(), ["X-Partner-ID", "X-Signature", "X-Timestamp"]);
    assert.equal(headers["X-Partner-ID"], PARTNER_ID);
    assert.equal(headers["X-Timestamp"], String(NOW));
    assert.equal(checkTimestamp(headers["X-Timestamp"], NOW), true);
    assert.match(headers["X-Signature"], /^[A-Za-z0-9+/]{86}==$/);
    assert.ok(decodeSignature(headers["X-Signature"]));
  });

  test("verifies", () => {
    assert.equal(serverVerifies(publicKey, headers, request), true);
  });

  test("verifies with a KeyObject private key and a string body", () => {
    const h = signRequest({
      partnerId: PARTNER_ID,
      privateKey: createPrivateKey(privateKeyPem),
      method: "put",
      target: "/v1/x",
      body: "héllo",
      nowMs: NOW,
    });
    assert.equal(
      serverVerifies(publicKey, h, { method: "PUT", target: "/v1/x", body: Buffer.from("héllo") }),
      true,
    );
  });

  test("is insensitive to method case and query order, as the contract says", () => {
    assert.equal(serverVerifies(publicKey, headers, { ...request, method: "post" }), true);
    assert.equal(
      serverVerifies(publicKey, headers, {
        ...request,
        target: "/v1/partner/orders?page=2&status=completed",
      }),
      true,
    );
  });

  const flippedBody = Buffer.from(request.body);
  flippedBody[5] = flippedBody[5]! ^ 0x01;
  type Req = { method: string; target: string; body?: Uint8Array | string };
  const tampered: [string, { "X-Timestamp": string; "X-Signature": string }, Req][] = [
    ["timestamp", { ...headers, "X-Timestamp": String(NOW - 1) }, request],
    ["method", headers, { ...request, method: "PUT" }],
    ["path", headers, { ...request, target: "/v1/partner/orders/?status=completed&page=2" }],
    ["path case", headers, { ...request, target: "/v1/partner/Orders?status=completed&page=2" }],
    ["query value", headers, { ...request, target: "/v1/partner/orders?status=completed&page=3" }],
    ["missing query", headers, { ...request, target: "/v1/partner/orders" }],
    ["one body byte", headers, { ...request, body: flippedBody }],
    ["body removed", headers, { method: request.method, target: request.target }],
  ];
  for (const [name, h, req] of tampered) {
    test(`fails when the ${name} changes`, () => {
      assert.equal(serverVerifies(publicKey, h, req), false);
    });
  }

  test("fails with another partner's key", () => {
    const other = createPublicKey(generateKeyPair().publicKeyPem);
    assert.equal(serverVerifies(other, headers, request), false);
  });

  test("repeated parameters: order is covered by the signature", () => {
    const h = signRequest({
      partnerId: PARTNER_ID,
      privateKey: privateKeyPem,
      method: "GET",
      target: "/x?s=a&s=b",
      nowMs: NOW,
    });
    assert.equal(serverVerifies(publicKey, h, { method: "GET", target: "/x?s=a&s=b" }), true);
    assert.equal(serverVerifies(publicKey, h, { method: "GET", target: "/x?s=b&s=a" }), false);
  });

  test("verifySignature never throws", () => {
    const canonical = canonicalString({ timestamp: String(NOW), method: "GET", path: "/x" });
    const rsa = generateKeyPairSync("rsa", { modulusLength: 2048 }).publicKey;
    const priv = createPrivateKey(privateKeyPem);
    const sig = decodeSignature(headers["X-Signature"])!;
    assert.equal(verifySignature(rsa, canonical, sig), false);
    assert.equal(verifySignature(priv, canonical, sig), false);
    assert.equal(verifySignature(publicKey, canonical, Buffer.alloc(0)), false);
    assert.equal(verifySignature(publicKey, canonical, Buffer.alloc(65)), false);
    assert.equal(verifySignature(publicKey, canonical, Buffer.alloc(64, 0xff)), false);
    assert.equal(verifySignature(publicKey, canonical, null as unknown as Buffer), false);
    assert.equal(verifySignature(null as unknown as KeyObject, canonical, sig), false);
  });

  test("signRequest rejects unusable inputs", () => {
    const base = {
      partnerId: PARTNER_ID,
      privateKey: privateKeyPem,
      method: "GET",
      target: "/x",
      nowMs: NOW,
    };
    assert.throws(() => signRequest({ ...base, target: "http://host/x" }), TypeError);
    assert.throws(() => signRequest({ ...base, target: "" }), TypeError);
    assert.throws(() => signRequest({ ...base, privateKey: publicKey }), TypeError);
    assert.throws(
      () => signRequest({ ...base, privateKey: generateKeyPairSync("ed448").privateKey }),
      TypeError,
    );
    assert.throws(() => signRequest({ ...base, nowMs: NOW + 0.5 }), RangeError);
    assert.throws(() => signRequest({ ...base, nowMs: 1_700_000_000 }), RangeError);
    assert.throws(() => signRequest({ ...base, nowMs: Number.NaN }), RangeError);
  });

  test("generateKeyPair returns SPKI / PKCS#8 PEM", () => {
    const pair = generateKeyPair();
    assert.match(pair.publicKeyPem, /^-----BEGIN PUBLIC KEY-----\n/);
    assert.match(pair.privateKeyPem, /^-----BEGIN PRIVATE KEY-----\n/);
    assert.equal(createPrivateKey(pair.privateKeyPem).asymmetricKeyType, "ed25519");
  });
});

function opensslAvailable(): boolean {
  try {
    execFileSync("openssl", ["version"], { stdio: "pipe" });
    return true;
  } catch {
    return false;
  }
}

describe("interop with the openssl command line", {
  skip: opensslAvailable() ? false : "openssl not found",
}, () => {
  // A realistic canonical string (sorted query, hash of a UTF-8 body). It is
  // written to disk without a trailing newline because openssl signs the
  // file's exact bytes.
  const canonical = canonicalString({
    timestamp: String(NOW),
    method: "POST",
    path: canonicalPath("/v1/partner/orders?status=completed&page=2&source=bank")!,
    body: '{"amount":"12.50","currency":"EUR","note":"naïve"}',
  });

  test("openssl signs, the module verifies", (t) => {
    const dir = mkdtempSync(join(tmpdir(), "counterpart-signing-"));
    t.after(() => rmSync(dir, { recursive: true, force: true }));
    const keyPath = join(dir, "key.pem");
    const pubPath = join(dir, "pub.pem");
    const msgPath = join(dir, "canonical.txt");
    const sigPath = join(dir, "sig.bin");
    execFileSync("openssl", ["genpkey", "-algorithm", "ed25519", "-out", keyPath], { stdio: "pipe" });
    execFileSync("openssl", ["pkey", "-in", keyPath, "-pubout", "-out", pubPath], { stdio: "pipe" });
    writeFileSync(msgPath, canonical, "utf8");
    execFileSync(
      "openssl",
      ["pkeyutl", "-sign", "-inkey", keyPath, "-rawin", "-in", msgPath, "-out", sigPath],
      {
        stdio: "pipe",
      },
    );

    const header = readFileSync(sigPath).toString("base64");
    const parsed = parsePublicKey(readFileSync(pubPath, "utf8"));
    assert.ok(parsed.ok, "openssl-generated public key must parse");
    const sig = decodeSignature(header);
    assert.ok(sig, "openssl signature must decode as a strict header");
    assert.equal(verifySignature(parsed.key, canonical, sig), true);
    assert.equal(verifySignature(parsed.key, `${canonical}x`, sig), false);

    // Ed25519 is deterministic: the module signing with openssl's key must
    // give the identical signature, i.e. both sign the same bytes.
    const headers = signRequest({
      partnerId: PARTNER_ID,
      privateKey: readFileSync(keyPath, "utf8"),
      method: "post",
      target: "/v1/partner/orders?status=completed&page=2&source=bank",
      body: '{"amount":"12.50","currency":"EUR","note":"naïve"}',
      nowMs: NOW,
    });
    assert.equal(headers["X-Signature"], header);
  });

  test("the module signs, openssl verifies", (t) => {
    const dir = mkdtempSync(join(tmpdir(), "counterpart-signing-"));
    t.after(() => rmSync(dir, { recursive: true, force: true }));
    const { publicKeyPem, privateKeyPem } = generateKeyPair();
    const pubPath = join(dir, "pub.pem");
    const msgPath = join(dir, "canonical.txt");
    const sigPath = join(dir, "sig.bin");
    writeFileSync(pubPath, publicKeyPem);
    writeFileSync(msgPath, canonical, "utf8");

    const headers = signRequest({
      partnerId: PARTNER_ID,
      privateKey: privateKeyPem,
      method: "POST",
      target: "/v1/partner/orders?status=completed&page=2&source=bank",
      body: '{"amount":"12.50","currency":"EUR","note":"naïve"}',
      nowMs: NOW,
    });
    writeFileSync(sigPath, decodeSignature(headers["X-Signature"])!);

    const verifyArgs = [
      "pkeyutl",
      "-verify",
      "-pubin",
      "-inkey",
      pubPath,
      "-rawin",
      "-in",
      msgPath,
      "-sigfile",
      sigPath,
    ];
    const out = execFileSync("openssl", verifyArgs, { stdio: "pipe" }).toString();
    assert.match(out, /Signature Verified Successfully/);

    // And openssl must reject it for a different message (exit status != 0).
    writeFileSync(msgPath, `${canonical}x`, "utf8");
    assert.throws(() => execFileSync("openssl", verifyArgs, { stdio: "pipe" }));
  });
});
