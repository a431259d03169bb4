// The one request sender every resource goes through: it builds the target, serialises the body
// once, signs exactly those bytes with a fresh timestamp on every attempt, applies the timeout,
// and retries only where docs/reference.md §7.4 allows it (500/503, and failures without a response), with
// exponential backoff and jitter, a bounded number of times. 429 (a rate limit) and 408 (the
// request was not received in time) applied nothing either: they are retried too, a 429 after the
// Retry-After the service gave, when that wait fits in retryMaxDelayMs (else it is thrown at once,
// with the wait in RateLimitError.retryAfterSeconds).
//
// Why a fresh signature per attempt: the service refuses a state-changing request whose signature
// it already accepted (a replay), and refuses timestamps older than 60 s; a retry that reused the
// first attempt's headers would fail on either rule.

import { bodyHash, signRequest } from "@counterpart/protocol";
import { checkMaxRetries, checkTimeoutMs, type SenderConfig } from "./config.ts";
import {
  CounterpartError,
  type ErrorFields,
  errorFromResponse,
  NetworkError,
  type RequestInfo,
  TimeoutError,
} from "./errors.ts";
import type { MultipartBody } from "./multipart.ts";

export type QueryValue = string | number | boolean | Date | readonly string[] | null | undefined;

export interface ApiRequest {
  method: "GET" | "POST" | "PUT" | "DELETE";
  /** The path with every variable segment already encoded (see `segment`). */
  path: string;
  query?: Readonly<Record<string, QueryValue>>;
  /** Serialised with JSON.stringify exactly once; that string is what is signed and sent. */
  json?: unknown;
  multipart?: MultipartBody;
  /** Public endpoints (docs/reference.md §4.1) are sent without signature headers. */
  signed: boolean;
  /**
   * True when sending the request again cannot apply it twice or report a false failure (reads,
   * full-replacement PUTs, quotes, and orders carrying a partner_order_ref). Only such requests are
   * sent again after a timeout or a connection lost mid-request, where the first copy may have
   * reached the service. Any request is retried after 500/503 (which applied nothing) and after a
   * connection that was never made.
   */
  replaySafe: boolean;
  /**
   * For a DELETE: a 404 answering a copy sent again after an attempt that may have reached the
   * service (a timeout, a connection lost mid-request) means that attempt deleted the record, so
   * the call succeeds. Without it a replay-safe delete whose response was lost would report a false
   * failure. A 404 to the first attempt, or after answers that applied nothing, still throws.
   */
  notFoundAfterLostResponseIsDone?: boolean;
}

/** Per-call options; each overrides the client's setting for this call. */
export interface RequestOptions {
  /** Aborts the call (and its backoff); the call then rejects with the signal's reason. */
  signal?: AbortSignal;
  timeoutMs?: number;
  maxRetries?: number;
}

export interface ApiResponse {
  status: number;
  /** The parsed JSON body; undefined for an empty one (204). */
  body: unknown;
  info: RequestInfo;
}

/** Failure codes (undici, libuv) that mean the connection was never made: nothing was sent. */
const notSentCodes = new Set([
  "ECONNREFUSED",
  "ENOTFOUND",
  "EAI_AGAIN",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "UND_ERR_CONNECT_TIMEOUT",
]);

/**
 * Answers that applied nothing and may be sent again as they are: 500 and 503 (docs/reference.md §7.4),
 * 429 (a rate limit, after Retry-After) and 408 (the request was not received in full in time).
 */
const retryableStatuses = new Set([408, 429, 500, 503]);

/** Tries at a timestamp that differs from an identical request's, 1 ms apart. */
const TIMESTAMP_WAITS_MAX = 3;

/**
 * encodeURIComponent, plus the apostrophe: the URL parser percent-encodes "'" in the query of an
 * http(s) URL, and the bytes signed must be the bytes sent.
 */
export function encodeComponent(value: string): string {
  return encodeURIComponent(value).replaceAll("'", "%27");
}

/** A path segment from a caller's value: percent-encoded, never one the URL parser would fold. */
export function segment(value: string, what: string): string {
  if (typeof value !== "string" || value === "" || value === "." || value === "..") {
    throw new RangeError(
      `${what} must be a non-empty string other than "." and "..", got ${JSON.stringify(value)}`,
    );
  }
  return encodeComponent(value);
}

/** The query string (without "?") in the caller's order; arrays repeat their name. */
export function queryString(query: Readonly<Record<string, QueryValue>> | undefined): string {
  if (query === undefined) return "";
  const pieces: string[] = [];
  for (const [name, value] of Object.entries(query)) {
    if (value === undefined || value === null) continue;
    const values = Array.isArray(value) ? value : [value];
    for (const v of values as readonly (string | number | boolean | Date)[]) {
      let text: string;
      if (v instanceof Date) {
        if (Number.isNaN(v.getTime())) throw new RangeError(`${name} is an invalid Date`);
        text = v.toISOString();
      } else if (typeof v === "number") {
        if (!Number.isFinite(v)) throw new RangeError(`${name} must be a finite number, got ${v}`);
        text = String(v);
      } else {
        text = String(v);
      }
      pieces.push(`${encodeComponent(name)}=${encodeComponent(text)}`);
    }
  }
  return pieces.join("&");
}

function causeCode(err: unknown): string | null {
  let current: unknown = err;
  for (let depth = 0; depth < 5 && typeof current === "object" && current !== null; depth++) {
    const record = current as { code?: unknown; cause?: unknown; errors?: unknown };
    if (typeof record.code === "string") return record.code;
    if (Array.isArray(record.errors) && record.errors.length > 0) current = record.errors[0];
    else current = record.cause;
  }
  return null;
}

function causeMessage(err: unknown): string {
  const parts: string[] = [];
  let current: unknown = err;
  for (let depth = 0; depth < 3 && current instanceof Error; depth++) {
    parts.push(current.message);
    current = current.cause;
  }
  return parts.join(": ") || String(err);
}

function retryAfterMs(header: string | null): number | null {
  if (header === null || !/^[0-9]{1,6}$/.test(header.trim())) return null;
  return Number(header.trim()) * 1000;
}

type Attempt =
  | { kind: "response"; status: number; text: string; requestId: string | null; retryAfterMs: number | null }
  | { kind: "timeout"; requestId: string | null; cause: unknown }
  | { kind: "network"; maybeSent: boolean; requestId: string | null; cause: unknown };

export class RequestSender {
  readonly #config: SenderConfig;
  #signedAtMs = 0;
  #signedKeys = new Set<string>();

  constructor(config: SenderConfig) {
    this.#config = config;
  }

  /** Sends the request (retrying as allowed) and returns the success response, or throws. */
  async send(request: ApiRequest, options: RequestOptions = {}): Promise<ApiResponse> {
    const config = this.#config;
    const timeoutMs = checkTimeoutMs(options.timeoutMs ?? config.timeoutMs);
    const maxRetries = checkMaxRetries(options.maxRetries ?? config.maxRetries);
    const query = queryString(request.query);
    const target = `${config.basePath}${request.path}${query === "" ? "" : `?${query}`}`;
    const url = `${config.origin}${target}`;
    // What fetch would send must be what is signed; a target the URL parser rewrites is a bug here.
    const parsed = new URL(url);
    if (parsed.pathname + parsed.search !== target) {
      throw new RangeError(
        `Counterpart: the request target ${JSON.stringify(target)} would not be sent as written`,
      );
    }

    const headers: Record<string, string> = { accept: "application/json", "user-agent": config.userAgent };
    let body: string | Uint8Array | undefined;
    if (request.json !== undefined) {
      body = JSON.stringify(request.json);
      headers["content-type"] = "application/json";
    } else if (request.multipart !== undefined) {
      body = request.multipart.body;
      headers["content-type"] = request.multipart.contentType;
    }

    // Whether an earlier attempt may have reached the service and been applied, its answer lost.
    let maybeApplied = false;
    for (let attempt = 0; ; attempt++) {
      options.signal?.throwIfAborted();
      const signature = request.signed ? await this.#sign(request.method, target, body, options.signal) : {};
      const outcome = await this.#attempt(
        url,
        { method: request.method, headers: { ...headers, ...signature }, body },
        timeoutMs,
        options.signal,
      );
      const info: RequestInfo = { method: request.method, target, requestId: outcome.requestId };
      if (outcome.kind === "response" && outcome.status >= 200 && outcome.status < 300) {
        return { status: outcome.status, body: parseBody(outcome.text, info, outcome.status), info };
      }
      if (
        outcome.kind === "response" &&
        outcome.status === 404 &&
        maybeApplied &&
        request.notFoundAfterLostResponseIsDone === true
      ) {
        return { status: outcome.status, body: undefined, info };
      }
      if (outcome.kind === "timeout" || (outcome.kind === "network" && outcome.maybeSent))
        maybeApplied = true;

      const retryable =
        outcome.kind === "response"
          ? retryableStatuses.has(outcome.status) && this.#waitFits(outcome)
          : outcome.kind === "network"
            ? !outcome.maybeSent || request.replaySafe
            : request.replaySafe;
      if (retryable && attempt < maxRetries) {
        await config.sleep(
          this.#backoffMs(attempt, outcome.kind === "response" ? outcome.retryAfterMs : null),
          options.signal,
        );
        continue;
      }
      throw this.#failure(outcome, info, { attempts: attempt + 1, timeoutMs, request });
    }
  }

  /**
   * Signature headers at the current time. Ed25519 is deterministic, so two identical
   * state-changing requests signed in the same millisecond would carry the same signature and the
   * second would be refused as a replay; such a request waits for the next millisecond.
   */
  async #sign(
    method: string,
    target: string,
    body: string | Uint8Array | undefined,
    signal: AbortSignal | undefined,
  ) {
    const config = this.#config;
    let nowMs = config.clock.nowMs();
    if (method !== "GET") {
      const key = `${method} ${target} ${bodyHash(body)}`;
      for (
        let i = 0;
        i < TIMESTAMP_WAITS_MAX && nowMs === this.#signedAtMs && this.#signedKeys.has(key);
        i++
      ) {
        await config.sleep(1, signal);
        nowMs = config.clock.nowMs();
      }
      if (nowMs !== this.#signedAtMs) {
        this.#signedAtMs = nowMs;
        this.#signedKeys = new Set();
      }
      this.#signedKeys.add(key);
    }
    return signRequest({
      partnerId: config.partnerId,
      privateKey: config.privateKey,
      method,
      target,
      body,
      nowMs,
    });
  }

  async #attempt(
    url: string,
    init: { method: string; headers: Record<string, string>; body: string | Uint8Array | undefined },
    timeoutMs: number,
    callerSignal: AbortSignal | undefined,
  ): Promise<Attempt> {
    const timeout = AbortSignal.timeout(timeoutMs);
    const signal = callerSignal === undefined ? timeout : AbortSignal.any([callerSignal, timeout]);
    let requestId: string | null = null;
    const failed = (err: unknown, responded: boolean): Attempt => {
      if (callerSignal?.aborted) throw callerSignal.reason;
      if (timeout.aborted || (err instanceof Error && err.name === "TimeoutError")) {
        return { kind: "timeout", requestId, cause: err };
      }
      // fetch reports bad arguments as a TypeError without a cause: a bug, not the network.
      if (err instanceof TypeError && err.cause === undefined && causeCode(err) === null) throw err;
      const code = causeCode(err);
      return {
        kind: "network",
        maybeSent: responded || code === null || !notSentCodes.has(code),
        requestId,
        cause: err,
      };
    };
    let response: Awaited<ReturnType<SenderConfig["fetch"]>>;
    try {
      response = await this.#config.fetch(url, { ...init, signal });
    } catch (err) {
      return failed(err, false);
    }
    requestId = response.headers.get("x-request-id");
    try {
      const text = await response.text();
      return {
        kind: "response",
        status: response.status,
        text,
        requestId,
        retryAfterMs: retryAfterMs(response.headers.get("retry-after")),
      };
    } catch (err) {
      return failed(err, true);
    }
  }

  /** A 429 is sent again only if its Retry-After fits in the retry budget's longest wait. */
  #waitFits(outcome: Attempt & { kind: "response" }): boolean {
    if (outcome.status !== 429 || outcome.retryAfterMs === null) return true;
    return outcome.retryAfterMs <= this.#config.retryMaxDelayMs;
  }

  /** Exponential backoff with equal jitter: half the ceiling fixed, half random; Retry-After honoured. */
  #backoffMs(attempt: number, retryAfter: number | null): number {
    const { retryBaseDelayMs, retryMaxDelayMs, random } = this.#config;
    const ceiling = Math.min(retryMaxDelayMs, retryBaseDelayMs * 2 ** attempt);
    const jittered = ceiling / 2 + (random() * ceiling) / 2;
    return Math.round(Math.min(retryMaxDelayMs, Math.max(jittered, retryAfter ?? 0)));
  }

  #failure(
    outcome: Attempt,
    info: RequestInfo,
    context: { attempts: number; timeoutMs: number; request: ApiRequest },
  ): CounterpartError {
    const tries = context.attempts === 1 ? "" : ` (after ${context.attempts} attempts)`;
    const where = `${info.method} ${info.target}`;
    if (outcome.kind === "response") {
      return errorFromResponse(
        { status: outcome.status, text: outcome.text, retryAfterMs: outcome.retryAfterMs },
        { ...info, body: context.request.json },
        context.attempts,
      );
    }
    const fields: ErrorFields = {
      ...info,
      status: null,
      code: null,
      msg: null,
      msgDetail: null,
      cause: outcome.cause,
    };
    const unsure = context.request.replaySafe
      ? "it is safe to send it again later"
      : "the service may have applied it, so it was not sent again: check its outcome (e.g. list or get the record) before repeating it";
    if (outcome.kind === "timeout") {
      return new TimeoutError(
        `${where}: no response within ${context.timeoutMs} ms${tries}; ${unsure}. ` +
          "To fix: check that the service is reachable, or raise timeoutMs",
        fields,
        context.timeoutMs,
      );
    }
    const advice = outcome.maybeSent
      ? unsure
      : `the service at ${this.#config.origin} could not be reached; check baseUrl and that the service is running`;
    return new NetworkError(
      `${where}: no response (${causeMessage(outcome.cause)})${tries}; ${advice}`,
      fields,
      outcome.maybeSent,
    );
  }
}

function parseBody(text: string, info: RequestInfo, status: number): unknown {
  if (text === "") return undefined;
  try {
    return JSON.parse(text);
  } catch (err) {
    throw new CounterpartError(
      `${info.method} ${info.target}: HTTP ${status} with a body that is not JSON; check that baseUrl points at the Counterpart partner API`,
      { ...info, status, code: null, msg: null, msgDetail: null, cause: err },
    );
  }
}
