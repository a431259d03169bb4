// Errors the SDK throws: one class per way a request can fail, each carrying the wire's status, code,
// msg and msg_detail, and a message that says how to fix the request where the code tells us. The
// codes come from @counterpart/protocol's errorCatalog, so a code added there without a hint here is
// a type error (the `hints` record is exhaustive).

import { type ErrorName, errorCatalog, type FieldError } from "@counterpart/protocol";
import type { Order, Quote } from "./types.ts";

/** Where a failed request went, for messages and support tickets. */
export interface RequestInfo {
  method: string;
  /** The path and query as sent, e.g. "/v1/partner/orders?page=2". */
  target: string;
  /** The service's X-Request-Id for the last attempt, when a response arrived. */
  requestId: string | null;
}

export interface ErrorFields extends RequestInfo {
  status: number | null;
  code: number | null;
  msg: string | null;
  msgDetail: unknown;
  cause?: unknown;
}

/** The base of every error the SDK throws about a request. */
export class CounterpartError extends Error {
  override name = "CounterpartError";
  /** HTTP status; null when no response arrived (network failure, timeout). */
  readonly status: number | null;
  /** The body's application code (e.g. 2008), or the status for 401/404/422/5xx; null without a body. */
  readonly code: number | null;
  /** The body's `msg`, as the service wrote it. */
  readonly msg: string | null;
  /** The body's `msg_detail`: field errors on 422, `{quote}` or `{limit, quote}` on some trading errors. */
  readonly msgDetail: unknown;
  readonly method: string;
  readonly target: string;
  readonly requestId: string | null;

  constructor(message: string, fields: ErrorFields) {
    super(message, fields.cause === undefined ? undefined : { cause: fields.cause });
    this.status = fields.status;
    this.code = fields.code;
    this.msg = fields.msg;
    this.msgDetail = fields.msgDetail;
    this.method = fields.method;
    this.target = fields.target;
    this.requestId = fields.requestId;
  }
}

/** 401: the signature, timestamp, partner id or source IP was refused. Never retried. */
export class AuthenticationError extends CounterpartError {
  override name = "AuthenticationError";
}

/** 404: no such asset, country, pair, order or document for this partner (or no such route). */
export class NotFoundError extends CounterpartError {
  override name = "NotFoundError";
}

/** 422: the request does not match the schema; `fieldErrors` says where and why. */
export class ValidationError extends CounterpartError {
  override name = "ValidationError";
  readonly fieldErrors: FieldError[];
  constructor(message: string, fields: ErrorFields, fieldErrors: FieldError[]) {
    super(message, fields);
    this.fieldErrors = fieldErrors;
  }
}

/**
 * 409, code 2020: the partner_order_ref is already used. Deposits, withdrawals and executions with a
 * reference recover from it by fetching the order the reference names (see `OrderResult.replayed`);
 * this is thrown when that order is not the one the request would have created.
 */
export class ConflictError extends CounterpartError {
  override name = "ConflictError";
  readonly partnerOrderRef: string | null;
  /** The order that already holds the reference, when the SDK fetched it. */
  readonly existingOrder: Order | null;
  constructor(
    message: string,
    fields: ErrorFields,
    partnerOrderRef: string | null,
    existingOrder: Order | null,
  ) {
    super(message, fields);
    this.partnerOrderRef = partnerOrderRef;
    this.existingOrder = existingOrder;
  }
}

/**
 * 2020 where the order holding the reference ended `failed` or `rejected`: the original request
 * did not move money, and the reference cannot be used again. Send the request with a new
 * partner_order_ref (for a trade, with a new quote too).
 */
export class OrderRefFailedError extends ConflictError {
  override name = "OrderRefFailedError";
  readonly order: Order;
  constructor(message: string, fields: ErrorFields, order: Order) {
    super(message, fields, order.partner_order_ref, order);
    this.order = order;
  }
}

/**
 * Any other 4xx: an application error of docs/reference.md §7.3 (HTTP 400 with its code), or 405/413/431.
 * `errorName` is the code's name in the protocol's errorCatalog. On quotes, `quote` and `limit`
 * carry msg_detail's context (3005, 4000, 4001, 4003, 4004).
 */
export class ApiError extends CounterpartError {
  override name = "ApiError";
  readonly errorName: ErrorName | null;
  readonly quote: Quote | null;
  readonly limit: string | null;
  constructor(message: string, fields: ErrorFields, errorName: ErrorName | null) {
    super(message, fields);
    this.errorName = errorName;
    const detail = isRecord(fields.msgDetail) ? fields.msgDetail : null;
    this.quote = detail !== null && isRecord(detail.quote) ? (detail.quote as unknown as Quote) : null;
    this.limit = detail !== null && typeof detail.limit === "string" ? detail.limit : null;
  }
}

/**
 * 429: the partner's rate-limit budget for this kind of request (reads, writes or quotes) is spent.
 * Nothing was applied. The SDK waits out `Retry-After` and sends the request again when that fits
 * in its retry budget (maxRetries, retryMaxDelayMs); this is thrown when it does not.
 */
export class RateLimitError extends ApiError {
  override name = "RateLimitError";
  /** Seconds the service asked to wait before the next request (Retry-After); null if not sent. */
  readonly retryAfterSeconds: number | null;
  constructor(message: string, fields: ErrorFields, retryAfterSeconds: number | null) {
    super(message, fields, "too_many_requests");
    this.retryAfterSeconds = retryAfterSeconds;
  }
}

/** 5xx: the service failed. 500 and 503 were already retried with backoff before this is thrown. */
export class ServerError extends CounterpartError {
  override name = "ServerError";
}

/**
 * No response: the connection failed. `maybeSent` is false when the request certainly never reached
 * the service (connection refused, name not resolved), so sending it again is safe.
 */
export class NetworkError extends CounterpartError {
  override name = "NetworkError";
  readonly maybeSent: boolean;
  constructor(message: string, fields: ErrorFields, maybeSent: boolean) {
    super(message, fields);
    this.maybeSent = maybeSent;
  }
}

/** No response within the timeout. The service may still have applied the request. */
export class TimeoutError extends CounterpartError {
  override name = "TimeoutError";
  readonly timeoutMs: number;
  constructor(message: string, fields: ErrorFields, timeoutMs: number) {
    super(message, fields);
    this.timeoutMs = timeoutMs;
  }
}

/** How to fix a request the service refused with this code. */
const hints: Record<ErrorName, string> = {
  bad_request:
    "the service could not read the HTTP request itself (its request line, target or headers), so no " +
    "operation saw it; nothing was applied; check any proxy between and the SDK version",
  unauthorized:
    "check the partner id, that the private key matches the public key registered with the service, " +
    "that this machine's clock is right (the timestamp must be within 60 seconds and not in the future), " +
    "and that this IP address is on the partner's allow-list; do not retry until one of these is fixed",
  forbidden: "the operator's role may not do this (the partner API never answers it)",
  not_found: "check the id or reference; records of other partners or clients are not visible",
  method_not_allowed: "this path does not take this method; check the SDK and service versions",
  request_timeout:
    "the request was not received in full in time (headers within 10 s, the whole request within 15 s); " +
    "nothing was applied; check the network path and send it again",
  payload_too_large: "the body is over the limit (JSON 1 MiB; uploads 5 MiB per file)",
  validation_error: "fix the fields listed and send the request again",
  too_many_requests:
    "the partner's rate limit for this kind of request is reached (or, on the admin API, too many " +
    "sign-in attempts); nothing was applied; wait the Retry-After seconds (error.retryAfterSeconds) " +
    "before sending it again, and spread requests out (the RateLimit-Remaining response header says " +
    "what is left)",
  headers_too_large: "the request headers are over 16 KiB",
  internal_error: "the service failed; the request applied nothing and can be sent again later",
  service_unavailable: "the service is busy; the request applied nothing and can be sent again later",
  invalid_client: "no client of this partner has this partner_client_id; create it first or fix the id",
  client_not_verified: "the client's status is not verified; it cannot trade or be funded until it is",
  client_deactivated:
    "reactivate the client with clients.setActive(partnerClientId, true), then send the request again",
  invalid_asset:
    "the asset does not exist or does not allow this operation (deposits and withdrawals need a published " +
    "fiat asset that is depositable or withdrawable); see assets.list()",
  invalid_asset_pair: "the pair does not exist or is not available to this partner; see assetPairs.list()",
  government_id_taken: "another client already has this government_id_number; fix the duplicate value",
  duplicate_order_ref:
    "the partner_order_ref is already used; fetch that order with orders.getByRef(), and use a new " +
    "reference for a new order",
  client_under_age: "the birth_date is below the legal age; such a client cannot be onboarded",
  invalid_residency: "residency_id is not a supported country; see countries.list()",
  invalid_citizenship: "citizenship_id is not a supported country; see countries.list()",
  invalid_place_of_birth: "place_of_birth_id is not a supported country; see countries.list()",
  residency_visa_required:
    "residency_id differs from citizenship_id, so residency_visa_number and residency_visa_doe are required",
  duplicate_partner_client_id:
    "a client with this partner_client_id exists already; fetch it with clients.get() or choose another id",
  duplicate_email: "another client already has this email; fix the duplicate value",
  duplicate_phone: "another client already has this phone; fix the duplicate value",
  insufficient_funds:
    "the client's available balance does not cover the trade; error.quote shows the amounts, " +
    "fund the client or lower base_amount",
  insufficient_funds_for_payment:
    "the client's available balance is below the amount; check balances.get() and lower the amount",
  trading_not_available: "the pair is not tradable now; see assetPairs.list() for tradable pairs",
  trading_temporarily_unavailable: "the pair's price feed is down; try the quote again later",
  amount_above_maximum: "base_amount is above the pair's maximum; error.limit holds the maximum",
  amount_below_minimum: "base_amount is below the pair's minimum; error.limit holds the minimum",
  invalid_trading_token:
    "the quote token expired, was already used, or belongs to another client; request a new quote " +
    "and execute it within its lifetime",
};

/** The hint for a catalog error name (exposed for integrators' own messages). */
export function errorHint(name: ErrorName): string {
  return hints[name];
}

const catalogEntries = Object.entries(errorCatalog) as [ErrorName, (typeof errorCatalog)[ErrorName]][];

/**
 * The catalog name of a wire error. Code 3005 has two entries (trade and withdrawal), told apart by
 * `msg`; failing that, the path decides.
 */
export function catalogName(code: number | null, msg: string | null, target: string): ErrorName | null {
  if (code === null) return null;
  const byCode = catalogEntries.filter(([, e]) => e.code === code);
  if (byCode.length === 0) return null;
  const byMsg = byCode.find(([, e]) => e.msg === msg);
  if (byMsg !== undefined) return byMsg[0];
  if (code === 3005)
    return target.startsWith("/v1/partner/withdrawals")
      ? "insufficient_funds_for_payment"
      : "insufficient_funds";
  return byCode[0]![0];
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function isFieldError(value: unknown): value is FieldError {
  return (
    isRecord(value) &&
    Array.isArray(value.loc) &&
    value.loc.every((p) => typeof p === "string" || typeof p === "number") &&
    typeof value.msg === "string" &&
    typeof value.type === "string"
  );
}

/** The error body's three fields, read defensively: a proxy's HTML page is not a Counterpart error. */
export function readErrorBody(text: string): { code: number | null; msg: string | null; msgDetail: unknown } {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return { code: null, msg: null, msgDetail: null };
  }
  if (!isRecord(parsed)) return { code: null, msg: null, msgDetail: null };
  return {
    code: typeof parsed.code === "number" ? parsed.code : null,
    msg: typeof parsed.msg === "string" ? parsed.msg : null,
    msgDetail: parsed.msg_detail ?? null,
  };
}

/** The partner_order_ref a JSON request body carried, for 2020 errors. */
export function orderRefOf(body: unknown): string | null {
  return isRecord(body) && typeof body.partner_order_ref === "string" ? body.partner_order_ref : null;
}

/** The error for a response that is not a success. */
export function errorFromResponse(
  response: { status: number; text: string; retryAfterMs?: number | null },
  request: RequestInfo & { body?: unknown },
  attempts = 1,
): CounterpartError {
  const { code: bodyCode, msg, msgDetail } = readErrorBody(response.text);
  const status = response.status;
  const code = bodyCode ?? status;
  const fields: ErrorFields = {
    status,
    code,
    msg,
    msgDetail,
    method: request.method,
    target: request.target,
    requestId: request.requestId,
  };
  const name = catalogName(code, msg, request.target);
  const where = `${request.method} ${request.target}`;
  const notes = [
    `HTTP ${status}`,
    ...(bodyCode !== null && bodyCode !== status ? [`code ${bodyCode}`] : []),
    ...(attempts > 1 ? [`after ${attempts} attempts`] : []),
  ];
  const said = msg === null ? notes.join(", ") : `${msg} (${notes.join(", ")})`;
  const hint = name === null ? null : hints[name];
  const message = (extra?: string) =>
    `${where}: ${said}${extra === undefined ? "" : `: ${extra}`}${hint === null ? "" : `. To fix: ${hint}`}`;

  if (status === 401) return new AuthenticationError(message(), fields);
  if (status === 404) return new NotFoundError(message(), fields);
  if (status === 422) {
    const fieldErrors = Array.isArray(msgDetail) ? msgDetail.filter(isFieldError) : [];
    const listed = fieldErrors.map((e) => `${e.loc.join(".")}: ${e.msg} [${e.type}]`).join("; ");
    return new ValidationError(message(listed === "" ? undefined : listed), fields, fieldErrors);
  }
  if (status === 409) return new ConflictError(message(), fields, orderRefOf(request.body), null);
  if (status >= 500) return new ServerError(message(), fields);
  if (status === 429) {
    const retryAfterMs = response.retryAfterMs ?? null;
    const retryAfterSeconds = retryAfterMs === null ? null : retryAfterMs / 1000;
    const wait = retryAfterSeconds === null ? undefined : `retry after ${retryAfterSeconds} s`;
    return new RateLimitError(message(wait), fields, retryAfterSeconds);
  }
  return new ApiError(message(), fields, name);
}
