// The client's options, their defaults and their bounds, checked once at construction with a
// message that says what to pass instead. Every limit of the SDK lives here.

import { createPrivateKey, type KeyObject } from "node:crypto";
import {
  type Clock,
  dispatchingFetch,
  type FetchPort,
  type Random,
  type Sleep,
  systemClock,
  systemFetch,
  systemRandom,
  systemSleep,
} from "./ports.ts";

export const limits = {
  timeoutMsDefault: 30_000,
  timeoutMsMax: 600_000,
  maxRetriesDefault: 2,
  maxRetriesMax: 10,
  retryBaseDelayMsDefault: 500,
  retryMaxDelayMsDefault: 10_000,
  retryDelayMsMax: 300_000,
  /** docs/reference.md §8: page_size from 1 to 100; iterators ask for the largest page. */
  pageSizeMax: 100,
  /** The service refuses pages past this; an iterator never asks for one. */
  pageMax: 1_000_000,
} as const;

export const sdkVersion = "0.2.0";

export interface CounterpartOptions {
  /** The service's address, e.g. "https://api.example.com" or the sandbox's "http://127.0.0.1:8080". */
  baseUrl: string;
  /** The partner id the operator issued (a UUID), sent as X-Partner-ID. */
  partnerId: string;
  /**
   * The partner's Ed25519 private key: PKCS#8 PEM text, the raw 32-byte seed (a Uint8Array or
   * Buffer), or a KeyObject. It never leaves this process.
   */
  privateKey: string | Uint8Array | KeyObject;
  /** Per attempt, in ms; default 30 000. */
  timeoutMs?: number;
  /** Attempts after the first for retryable failures (408, 429, 500, 503, network); default 2, at most 10. */
  maxRetries?: number;
  /** First backoff ceiling in ms; doubles each retry (with jitter), up to retryMaxDelayMs. Default 500. */
  retryBaseDelayMs?: number;
  /** Largest backoff in ms, Retry-After included; default 10 000. */
  retryMaxDelayMs?: number;
  /**
   * Handed to fetch as its `dispatcher`: an undici Agent or ProxyAgent (`npm install undici`) for
   * keep-alive, connection limits, TLS options or an outgoing proxy. Ignored when `fetch` is set.
   */
  dispatcher?: unknown;
  /** Replaces the HTTP client (tests, or a fetch of your own); the global fetch by default. */
  fetch?: FetchPort;
  /** Ports, for tests: clock (X-Timestamp), the backoff's sleep and jitter. */
  clock?: Clock;
  sleep?: Sleep;
  random?: Random;
  /** Appended to the SDK's User-Agent, e.g. "acme-wallet/3.2". */
  appInfo?: string;
}

export interface SenderConfig {
  /** Origin without a trailing slash, e.g. "https://api.example.com". */
  origin: string;
  /** A path prefix of baseUrl without a trailing slash ("" usually); part of the signed path. */
  basePath: string;
  partnerId: string;
  privateKey: KeyObject;
  timeoutMs: number;
  maxRetries: number;
  retryBaseDelayMs: number;
  retryMaxDelayMs: number;
  userAgent: string;
  fetch: FetchPort;
  clock: Clock;
  sleep: Sleep;
  random: Random;
}

function integerIn(name: string, value: number, min: number, max: number): number {
  if (!Number.isSafeInteger(value) || value < min || value > max) {
    throw new RangeError(
      `Counterpart: ${name} must be an integer from ${min} to ${max}, got ${String(value)}`,
    );
  }
  return value;
}

export function checkTimeoutMs(value: number): number {
  return integerIn("timeoutMs", value, 1, limits.timeoutMsMax);
}

export function checkMaxRetries(value: number): number {
  return integerIn("maxRetries", value, 0, limits.maxRetriesMax);
}

/** The PKCS#8 DER prefix of an Ed25519 private key (RFC 8410): the 32-byte seed follows it. */
const ed25519Pkcs8Prefix = Buffer.from("302e020100300506032b657004220420", "hex");

function privateKeyOf(value: string | Uint8Array | KeyObject): KeyObject {
  if (value instanceof Uint8Array) {
    if (value.length !== 32) {
      throw new TypeError(
        `Counterpart: a privateKey given as bytes must be the 32-byte Ed25519 seed, got ${value.length} bytes; ` +
          "pass PEM text as a string",
      );
    }
    return createPrivateKey({
      key: Buffer.concat([ed25519Pkcs8Prefix, value]),
      format: "der",
      type: "pkcs8",
    });
  }
  if (typeof value === "string" && value.includes("-----BEGIN PUBLIC KEY-----")) {
    throw new TypeError(
      "Counterpart: privateKey is a public key; pass the partner's private key (the service keeps the public one)",
    );
  }
  let key: KeyObject;
  try {
    key = typeof value === "string" ? createPrivateKey(value) : value;
  } catch (err) {
    throw new TypeError(
      "Counterpart: privateKey is not a readable private key; pass the PEM text of the partner's Ed25519 " +
        "private key (it begins with -----BEGIN PRIVATE KEY-----), not its file name or the public key",
      { cause: err },
    );
  }
  if (key.type !== "private") {
    throw new TypeError(
      "Counterpart: privateKey is a public key; pass the partner's private key (the service keeps the public one)",
    );
  }
  if (key.asymmetricKeyType !== "ed25519") {
    throw new TypeError(
      `Counterpart: privateKey is a ${key.asymmetricKeyType ?? "non-Ed25519"} key; the service verifies Ed25519 ` +
        "signatures only (generate a key pair with `counterpart keygen` or generateTestKeyPair())",
    );
  }
  return key;
}

function baseUrlOf(value: string): { origin: string; basePath: string } {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new TypeError(
      `Counterpart: baseUrl must be an absolute http(s) URL such as https://api.example.com, got ${JSON.stringify(value)}`,
    );
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    throw new TypeError(`Counterpart: baseUrl must use http or https, got ${url.protocol}`);
  }
  if (url.search !== "" || url.hash !== "" || url.username !== "" || url.password !== "") {
    throw new TypeError("Counterpart: baseUrl must not carry a query, fragment or credentials");
  }
  return { origin: url.origin, basePath: url.pathname.replace(/\/+$/, "") };
}

/** The sender's configuration, every option checked; throws TypeError/RangeError naming the fix. */
export function resolveConfig(options: CounterpartOptions): SenderConfig {
  if (typeof options.partnerId !== "string" || !/^[\x21-\x7e]{1,255}$/.test(options.partnerId)) {
    throw new TypeError(
      "Counterpart: partnerId must be the partner id the operator issued (a UUID), without spaces",
    );
  }
  const { origin, basePath } = baseUrlOf(options.baseUrl);
  const retryBaseDelayMs = integerIn(
    "retryBaseDelayMs",
    options.retryBaseDelayMs ?? limits.retryBaseDelayMsDefault,
    0,
    limits.retryDelayMsMax,
  );
  const retryMaxDelayMs = integerIn(
    "retryMaxDelayMs",
    options.retryMaxDelayMs ?? limits.retryMaxDelayMsDefault,
    retryBaseDelayMs,
    limits.retryDelayMsMax,
  );
  const appInfo = options.appInfo?.replace(/[^\x20-\x7e]/g, "") ?? "";
  return {
    origin,
    basePath,
    partnerId: options.partnerId,
    privateKey: privateKeyOf(options.privateKey),
    timeoutMs: checkTimeoutMs(options.timeoutMs ?? limits.timeoutMsDefault),
    maxRetries: checkMaxRetries(options.maxRetries ?? limits.maxRetriesDefault),
    retryBaseDelayMs,
    retryMaxDelayMs,
    userAgent: `counterpart-sdk/${sdkVersion} node/${process.versions.node}${appInfo === "" ? "" : ` ${appInfo}`}`,
    fetch:
      options.fetch ??
      (options.dispatcher === undefined ? systemFetch : dispatchingFetch(options.dispatcher)),
    clock: options.clock ?? systemClock,
    sleep: options.sleep ?? systemSleep,
    random: options.random ?? systemRandom,
  };
}
