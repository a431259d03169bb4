// The Fastify side of partner authentication: every request in the /v1/partner space, matched or
// not, passes here before routing answers 404/405 and before validation answers 422. The reply to
// any failure is one fixed 401; the cause goes to the debug log only.

import { type ErrorName, errorBody, errorCatalog } from "@counterpart/protocol";
import type { FastifyReply, FastifyRequest } from "fastify";
import { limits } from "../config/limits.ts";
import type { CredentialWitness } from "../db/credential-witness.ts";
import { isUnavailable } from "../db/errors.ts";
import {
  type AuthResult,
  CredentialCheck,
  effectiveLimit,
  type PartnerAuthenticator,
  type RateClass,
  type RateDecision,
  type RateLimiter,
  SignedWrite,
} from "../modules/partners/index.ts";
import { announcesBody, readBodyBytes } from "./body-parsing.ts";
import { sendError } from "./http-error.ts";

const partnerPrefix = "/v1/partner";

/** The path of a raw request target, also for an absolute-form target. */
function targetPath(rawUrl: string): string {
  if (rawUrl.startsWith("/")) return rawUrl;
  const m = /^[a-zA-Z][a-zA-Z0-9+.-]*:\/\/[^/?#]*(\/[^?#]*)?/.exec(rawUrl);
  return m?.[1] ?? rawUrl;
}

const inSpace = (p: string) =>
  p === partnerPrefix || p.startsWith(`${partnerPrefix}/`) || p.startsWith(`${partnerPrefix}?`);

/** Whether a raw target lies in the signed /v1/partner space. */
export function isPartnerTarget(rawUrl: string): boolean {
  return inSpace(targetPath(rawUrl));
}

export function isPartnerSpace(request: FastifyRequest): boolean {
  const routed = request.routeOptions.url;
  return (routed !== undefined && inSpace(routed)) || isPartnerTarget(request.raw.url ?? "");
}

/** A header's values as sent; Node would join a repeated custom header with ", ". */
function header(request: FastifyRequest, name: string): string | string[] | undefined {
  const raw = request.raw.rawHeaders ?? [];
  let first: string | undefined;
  let all: string[] | undefined;
  for (let i = 0; i + 1 < raw.length; i += 2) {
    // Only a field name of the same length is lowercased (the others cannot match): a request
    // carries a dozen fields and this runs three times for each.
    const field = raw[i]!;
    if (field.length !== name.length || field.toLowerCase() !== name) continue;
    if (first === undefined) first = raw[i + 1]!;
    else if (all === undefined) all = [first, raw[i + 1]!];
    else all.push(raw[i + 1]!);
  }
  if (first === undefined) {
    const given = request.headers[name];
    if (given === undefined) return undefined;
    return Array.isArray(given) && given.length === 1 ? given[0] : given;
  }
  return all ?? first;
}

/** A raw path segment as the router decodes a parameter, or null when it cannot be decoded. */
function decodedSegment(segment: string): string | null {
  try {
    return decodeURIComponent(segment);
  } catch {
    return null;
  }
}

/**
 * Whether the raw target's path is the path the router matched (docs/decisions.md, "Hardening"):
 * static segments exactly as the route writes them (so no percent-encoding, same case, no
 * fragment), and each parameter segment one that decodes to the parameter the handler receives
 * and is not a dot segment (an empty one is left to the route: 404). Percent-encoding inside a
 * parameter is legitimate: it is the only way to send a partner_client_id or partner_order_ref
 * holding `/`, `%`, `?`, a space or non-ASCII text. A target the router did not match has nothing
 * to differ from.
 */
export function routedAsSent(request: FastifyRequest): boolean {
  if (request.is404) return true;
  const pattern = request.routeOptions.url;
  if (pattern === undefined) return true;
  const raw = request.raw.url ?? "";
  const q = raw.indexOf("?");
  const got = (q === -1 ? raw : raw.slice(0, q)).split("/");
  const want = pattern.split("/");
  if (got.length !== want.length) return false;
  const params = (request.params ?? {}) as Record<string, unknown>;
  return want.every((w, i) => {
    const g = got[i] ?? "";
    if (!w.startsWith(":")) return w === g;
    if (g === "") return params[w.slice(1)] === "";
    const value = decodedSegment(g);
    return value !== null && value !== "." && value !== ".." && value === params[w.slice(1)];
  });
}

/** The methods whose body Fastify leaves unread. */
const bodylessMethods = new Set(["GET", "HEAD", "TRACE"]);

export function signatureAuthHook(authenticator: PartnerAuthenticator, limiter: RateLimiter | null) {
  return async function signatureAuth(request: FastifyRequest, reply: FastifyReply): Promise<unknown> {
    if (!isPartnerSpace(request)) return;
    // Fastify reads no body for GET and HEAD; one sent anyway is read here, under the JSON limit,
    // so the signature is checked over the bytes sent (docs/decisions.md, "Hardening"). The route
    // then ignores it. A request without a body costs two header lookups.
    if (request.rawBody === null && bodylessMethods.has(request.raw.method ?? "") && announcesBody(request)) {
      request.rawBody = await readBodyBytes(request, request.raw, limits.jsonBodyBytesMax);
    }
    const config = request.routeOptions.config;
    const provisional = request.raw.method === "GET" && config?.witnessesCredentials === true;
    const recordInStatement = request.raw.method === "POST" && config?.recordsSignature === true;
    return authenticate(authenticator, request, reply, limiter, provisional, recordInStatement);
  };
}

/** What a witnessing route hands its statement: the request's pending check, if it has one. */
export function credentialWitness(request: FastifyRequest): CredentialWitness | undefined {
  const check = request.credentialCheck?.check;
  return check instanceof CredentialCheck ? check : undefined;
}

/** What a route that records the signature hands its write: the request's SignedWrite, if any. */
export function signedWrite(request: FastifyRequest): SignedWrite | undefined {
  const check = request.credentialCheck?.check;
  return check instanceof SignedWrite ? check : undefined;
}

const rateLimitFields = ["RateLimit-Limit", "RateLimit-Remaining", "RateLimit-Reset", "Retry-After"];

/** Replaces the answer about to leave by one of the contract's errors; its body to send. */
function answerInstead(reply: FastifyReply, name: ErrorName): string {
  for (const field of rateLimitFields) reply.removeHeader(field);
  reply.code(errorCatalog[name].status).type("application/json; charset=utf-8");
  return JSON.stringify(errorBody(name));
}

function setRateLimitFields(reply: FastifyReply, decision: RateDecision): void {
  reply.header("RateLimit-Limit", decision.limit);
  reply.header("RateLimit-Remaining", decision.remaining);
  reply.header("RateLimit-Reset", decision.resetSeconds);
}

/**
 * The onSend hook that settles a provisional read before its answer leaves: by the credentials
 * its statement carried, or by reading them now. Refused by the row: the fixed 401 instead of the
 * answer. Accepted by a row whose budget for the request's class is not the one the request was
 * taken from (the operator changed it since this process read it): taken from the row's budget,
 * whose RateLimit fields, or 429, the answer then carries. A read cannot be undone, but its answer
 * can be withheld: nothing a request under a retired key, a disabled partner or a changed
 * allow-list asks for leaves the process.
 */
export function settleCredentialsHook(limiter: RateLimiter | null) {
  return async function settleCredentials(
    request: FastifyRequest,
    reply: FastifyReply,
    payload: unknown,
  ): Promise<unknown> {
    const pending = request.credentialCheck;
    if (pending === null) return payload;
    request.credentialCheck = null;
    // A 503 (the database out of reach or out of time) tells nothing and changed nothing: it
    // leaves as it is, without waiting on the database a second time to settle the request.
    if (reply.statusCode === errorCatalog.service_unavailable.status) return payload;
    let settled: AuthResult;
    try {
      settled = await pending.check.settle();
    } catch (err) {
      // The row could not be read (the database out of reach): the request is not authenticated,
      // so its answer is withheld, and the 503 (or, for anything else, the 500) goes instead. A
      // hook that threw here would leave Fastify to answer in words of its own.
      if (isUnavailable(err)) {
        request.log.warn({ err }, "database unavailable while settling a signed request");
        return answerInstead(reply, "service_unavailable");
      }
      request.log.error({ err }, "unexpected failure while settling a signed request");
      return answerInstead(reply, "internal_error");
    }
    if (!settled.ok) {
      request.log.debug({ authFailure: settled.cause }, "signed request refused");
      return answerInstead(reply, "unauthorized");
    }
    if (limiter === null || pending.rateClass === null) return payload;
    const limit = effectiveLimit(settled.rateLimits, pending.rateClass);
    if (limit === pending.limit) return payload;
    const decision = await limiter.take(settled.partnerId, pending.rateClass, limit);
    if (decision === null) {
      for (const field of rateLimitFields) reply.removeHeader(field);
      return payload;
    }
    if (decision.allowed) {
      setRateLimitFields(reply, decision);
      return payload;
    }
    request.log.debug({ rateClass: pending.rateClass, partnerId: settled.partnerId }, "rate limit reached");
    const body = answerInstead(reply, "too_many_requests");
    setRateLimitFields(reply, decision);
    reply.header("Retry-After", decision.retryAfterSeconds);
    return body;
  };
}

/** The budget a signed request draws on (docs/decisions.md, "Rate limits"). */
export function rateClassOf(method: string, rawUrl: string): RateClass {
  if (method === "GET" || method === "HEAD") return "reads";
  const q = rawUrl.indexOf("?");
  const path = q === -1 ? rawUrl : rawUrl.slice(0, q);
  return method === "POST" && path === "/v1/partner/quotes" ? "quotes" : "writes";
}

/**
 * Authenticates one request, then takes it from the partner's rate-limit budget: on a failure the
 * fixed 401, or the 429 with Retry-After, has been sent and the reply is returned. Every
 * authenticated answer carries the budget's RateLimit-Limit, -Remaining and -Reset fields (none
 * when the budget could not be consulted: Redis out of reach).
 */
export async function authenticate(
  authenticator: PartnerAuthenticator,
  request: FastifyRequest,
  reply: FastifyReply,
  limiter: RateLimiter | null,
  provisional = false,
  recordInStatement = false,
): Promise<FastifyReply | undefined> {
  const result = await authenticator.authenticate(
    {
      partnerId: header(request, "x-partner-id"),
      timestamp: header(request, "x-timestamp"),
      signature: header(request, "x-signature"),
      method: request.raw.method ?? "",
      target: request.raw.url ?? "",
      routed: routedAsSent(request),
      body: request.rawBody ?? undefined,
      clientIp: request.ip,
    },
    { provisional, recordInStatement },
  );
  if (!result.ok) return refuse(request, reply, result.cause);
  request.partnerId = result.partnerId;
  let pending = result.pending ?? null;
  if (limiter === null) {
    request.credentialCheck = pending === null ? null : { check: pending, rateClass: null, limit: null };
    return undefined;
  }
  const cls = rateClassOf(request.raw.method ?? "", request.raw.url ?? "");
  let limit = effectiveLimit(result.rateLimits, cls);
  let decision = await limiter.take(result.partnerId, cls, limit);
  if (decision !== null && !decision.allowed && pending !== null) {
    // Over the budget this process kept: the row settles the request first, and its budget, which
    // the operator may have raised, decides.
    const settled = await pending.settle();
    pending = null;
    if (!settled.ok) return refuse(request, reply, settled.cause);
    const now = effectiveLimit(settled.rateLimits, cls);
    if (now !== limit) {
      limit = now;
      decision = await limiter.take(result.partnerId, cls, limit);
    }
  }
  if (pending instanceof SignedWrite)
    pending.beforeWrite = retakeBeforeWrite(limiter, reply, cls, limit, result.partnerId);
  // A write is taken from the budget it was judged by: its statement checks that budget is still
  // the row's; when it is not, the write is judged again by the row, and taken from the row's
  // budget (beforeWrite), before it changes anything.
  request.credentialCheck =
    pending === null
      ? null
      : { check: pending, rateClass: pending instanceof SignedWrite ? null : cls, limit };
  if (decision === null) return undefined;
  setRateLimitFields(reply, decision);
  if (decision.allowed) return undefined;
  request.log.debug({ rateClass: cls, partnerId: result.partnerId }, "rate limit reached");
  reply.header("Retry-After", decision.retryAfterSeconds);
  await sendError(reply, "too_many_requests");
  return reply;
}

/**
 * What a signed write does once judged again by the partner's row before its change: when the row's
 * budget for its class is not the one it was taken from, it is taken from the row's. Made here, not
 * in authenticate(), so that the step holds the reply and no more of that call's scope, which kept
 * every write's request alive past the young generation's collections (docs/decisions.md, "A
 * write's budget step made outside the request's authentication").
 */
function retakeBeforeWrite(
  limiter: RateLimiter,
  reply: FastifyReply,
  cls: RateClass,
  taken: number,
  partnerId: string,
): (settled: AuthResult & { ok: true }) => Promise<ErrorName | null> {
  return async (settled) => {
    const now = effectiveLimit(settled.rateLimits, cls);
    if (now === taken) return null;
    const again = await limiter.take(partnerId, cls, now);
    if (again === null) {
      for (const field of rateLimitFields) reply.removeHeader(field);
      return null;
    }
    setRateLimitFields(reply, again);
    if (again.allowed) return null;
    reply.log.debug({ rateClass: cls, partnerId }, "rate limit reached");
    reply.header("Retry-After", again.retryAfterSeconds);
    return "too_many_requests";
  };
}

async function refuse(request: FastifyRequest, reply: FastifyReply, cause: string): Promise<FastifyReply> {
  request.log.debug({ authFailure: cause }, "signed request refused");
  await sendError(reply, "unauthorized");
  return reply;
}
