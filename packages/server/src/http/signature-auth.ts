// The Fastify side of partner authentication: every request in the /v1/partner space, matched or
// not, passes here before routing answers 404/405 and before validation answers 422. The reply to
// any failure is one fixed 401; the cause goes to the debug log only.

import type { FastifyReply, FastifyRequest } from "fastify";
import type { PartnerAuthenticator } from "../modules/partners/index.ts";
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
  const values: string[] = [];
  for (let i = 0; i + 1 < raw.length; i += 2) {
    if (raw[i]!.toLowerCase() === name) values.push(raw[i + 1]!);
  }
  if (values.length === 0) {
    const given = request.headers[name];
    if (given === undefined) return undefined;
    return Array.isArray(given) && given.length === 1 ? given[0] : given;
  }
  return values.length === 1 ? values[0] : values;
}

export function signatureAuthHook(authenticator: PartnerAuthenticator) {
  return async function signatureAuth(request: FastifyRequest, reply: FastifyReply): Promise<unknown> {
    if (!isPartnerSpace(request)) return;
    return authenticate(authenticator, request, reply);
  };
}

/** Authenticates one request; on failure the fixed 401 has been sent and the reply is returned. */
export async function authenticate(
  authenticator: PartnerAuthenticator,
  request: FastifyRequest,
  reply: FastifyReply,
): Promise<FastifyReply | undefined> {
  {
    const result = await authenticator.authenticate({
      partnerId: header(request, "x-partner-id"),
      timestamp: header(request, "x-timestamp"),
      signature: header(request, "x-signature"),
      method: request.raw.method ?? "",
      target: request.raw.url ?? "",
      body: request.rawBody ?? undefined,
      clientIp: request.ip,
    });
    if (!result.ok) {
      request.log.debug({ authFailure: result.cause }, "signed request refused");
      await sendError(reply, "unauthorized");
      return reply;
    }
    request.partnerId = result.partnerId;
    return undefined;
  }
}
