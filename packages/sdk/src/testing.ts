// Helpers for integrators' own tests: a key pair and partner id to configure a fake or a sandbox
// with, a signer that produces the authentication headers for any request (or signs and sends it),
// and the check a fake Counterpart server needs to accept only correctly signed requests.

import { randomUUID } from "node:crypto";
import {
  canonicalPath,
  canonicalString,
  checkTimestamp,
  decodeSignature,
  generateKeyPair,
  parsePublicKey,
  type SignatureHeaders,
  signRequest,
  verifySignature,
} from "@counterpart/protocol";
import type { HttpResponse } from "./ports.ts";

export type { SignatureHeaders };

export interface TestKeyPair {
  /** A fresh partner id (a UUID), as the operator would issue. */
  partnerId: string;
  /**
   * What the service stores: a fake server checks requests with it (verifyTestRequest); for a
   * sandbox, send it to the sandbox's operator, who registers it.
   */
  publicKeyPem: string;
  /** What the partner keeps, for `new Counterpart({ privateKey })`. */
  privateKeyPem: string;
}

/** A new Ed25519 key pair as PEM, with a new partner id. */
export function generateTestKeyPair(): TestKeyPair {
  return { partnerId: randomUUID(), ...generateKeyPair() };
}

export interface TestSignerOptions {
  partnerId: string;
  privateKeyPem: string;
  /** Unix ms for X-Timestamp; Date.now by default. */
  now?: () => number;
  /** Used by `signer.fetch`; the global fetch by default. */
  fetch?: (url: string, init: RequestInit) => Promise<Response>;
}

export interface SignableRequest {
  method: string;
  /** The path and query exactly as requested, e.g. "/v1/partner/orders?page=2". */
  target: string;
  /** The body exactly as sent; none for a GET. */
  body?: string | Uint8Array;
}

export interface TestSigner {
  /** X-Partner-ID, X-Timestamp and X-Signature for this request. */
  headers(request: SignableRequest): SignatureHeaders;
  /**
   * fetch with the signature headers added: the signed target is the URL's path and query, the
   * signed body the `body` given (a string or bytes, sent as given).
   */
  fetch(
    url: string | URL,
    init?: {
      method?: string;
      headers?: Record<string, string>;
      body?: string | Uint8Array;
      signal?: AbortSignal;
    },
  ): Promise<Response>;
}

export function createTestSigner(options: TestSignerOptions): TestSigner {
  const now = options.now ?? (() => Date.now());
  const send = options.fetch ?? ((url: string, init: RequestInit) => fetch(url, init));
  const headers = (request: SignableRequest): SignatureHeaders =>
    signRequest({
      partnerId: options.partnerId,
      privateKey: options.privateKeyPem,
      method: request.method,
      target: request.target,
      body: request.body,
      nowMs: now(),
    });
  return {
    headers,
    fetch(url, init = {}) {
      const parsed = new URL(url);
      const method = (init.method ?? "GET").toUpperCase();
      const signature = headers({ method, target: parsed.pathname + parsed.search, body: init.body });
      return send(parsed.toString(), {
        method,
        headers: { ...(init.headers ?? {}), ...signature },
        ...(init.body === undefined ? {} : { body: init.body }),
        ...(init.signal === undefined ? {} : { signal: init.signal }),
      });
    },
  };
}

export type SignatureCheck =
  | { ok: true; partnerId: string }
  | {
      ok: false;
      reason: "missing_headers" | "bad_timestamp" | "bad_target" | "bad_signature" | "bad_public_key";
    };

/**
 * The service's signature check (docs/reference.md §5.3), for a fake Counterpart server in an integrator's
 * tests: the headers, the timestamp window, and the Ed25519 signature of the canonical string
 * over the raw target and body bytes as received. `nowMs` defaults to Date.now().
 */
export function verifyTestRequest(request: {
  publicKeyPem: string;
  method: string;
  target: string;
  body?: string | Uint8Array;
  /** A Headers object, or Node's IncomingHttpHeaders; a repeated auth header counts as missing. */
  headers: { get(name: string): string | null } | Record<string, string | string[] | undefined>;
  nowMs?: number;
}): SignatureCheck {
  const header = (name: string): string | null => {
    const h = request.headers;
    if (typeof h.get === "function") return (h as { get(name: string): string | null }).get(name);
    const record = h as Record<string, string | string[] | undefined>;
    const key = Object.keys(record).find((k) => k.toLowerCase() === name);
    const value = key === undefined ? undefined : record[key];
    return typeof value === "string" ? value : null;
  };
  const partnerId = header("x-partner-id");
  const timestamp = header("x-timestamp");
  const signature = header("x-signature");
  if (partnerId === null || timestamp === null || signature === null)
    return { ok: false, reason: "missing_headers" };
  if (!checkTimestamp(timestamp, request.nowMs ?? Date.now())) return { ok: false, reason: "bad_timestamp" };
  const path = canonicalPath(request.target);
  if (path === null) return { ok: false, reason: "bad_target" };
  const key = parsePublicKey(request.publicKeyPem);
  if (!key.ok) return { ok: false, reason: "bad_public_key" };
  const bytes = decodeSignature(signature);
  const canonical = canonicalString({ timestamp, method: request.method, path, body: request.body });
  if (bytes === null || !verifySignature(key.key, canonical, bytes))
    return { ok: false, reason: "bad_signature" };
  return { ok: true, partnerId };
}

/** A JSON response for a fake fetch port: `jsonResponse(200, { result: order })`. */
export function jsonResponse(
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
): HttpResponse {
  return new Response(body === undefined ? null : JSON.stringify(body), {
    status,
    headers: { "content-type": "application/json", ...headers },
  });
}
