// The admin API's operator accounts (admin role: http/admin-access.ts) and the console's session:
// sign in by password or by a one-time link, see the session, sign out (docs/decisions.md,
// "Operator accounts").

import type { FastifyInstance, FastifyReply } from "fastify";
import { Type } from "typebox";
import { limits } from "../../config/limits.ts";
import {
  auditNote,
  readCookie,
  reasonRequired,
  sameOrigin,
  sessionCookie,
  sessionCookieHeader,
} from "../../http/admin-access.ts";
import { HttpError, sendError, validationError } from "../../http/http-error.ts";
import {
  OperatorActiveBody,
  OperatorCreateBody,
  OperatorListSchema,
  OperatorPasswordBody,
  OperatorRoleBody,
  OperatorSchema,
  SessionSchema,
  SignInBody,
  SignInLinkSchema,
} from "./operator-views.ts";
import type { NewSession, OperatorResult, OperatorsService, SignInResult } from "./operators-service.ts";

const OperatorParams = Type.Object({ operator_id: Type.String({ maxLength: 64 }) });
const One = Type.Object({ result: OperatorSchema });
const OneSession = Type.Object({ result: SessionSchema });
const idleTimeoutS = Math.floor(limits.operatorSessionIdleMs / 1000);

function unwrap(result: OperatorResult) {
  if (result.ok) return { result: result.operator };
  switch (result.error) {
    case "operator_not_found":
      throw new HttpError("not_found");
    case "invalid_email":
      throw validationError([
        { loc: ["body", "email"], msg: "Input should be an e-mail address", type: "value_error" },
      ]);
    case "email_taken":
      throw validationError([
        { loc: ["body", "email"], msg: "An operator with this e-mail already exists", type: "value_error" },
      ]);
    case "invalid_password":
      throw validationError([
        {
          loc: ["body", "password"],
          msg: `Password should have ${result.min} to ${result.max} characters`,
          type: "string_length",
        },
      ]);
    case "reason_required":
      throw reasonRequired();
    case "sign_in_links_off":
    case "operator_disabled":
      throw new HttpError("not_found");
  }
}

export interface OperatorRoutesDeps {
  readonly operators: OperatorsService;
  /** Whether the session cookie is marked Secure (the admin listener is not on a loopback address). */
  readonly secureCookies: boolean;
}

export function operatorsRoutes(app: FastifyInstance, deps: OperatorRoutesDeps): void {
  const { operators } = deps;

  app.get("/admin/operators", { schema: { response: { 200: OperatorListSchema } } }, async () => ({
    items: await operators.list(),
  }));

  app.post<{ Body: OperatorCreateBody }>(
    "/admin/operators",
    { schema: { body: OperatorCreateBody, response: { 201: One } } },
    async (request, reply) => {
      const { email, role, password } = request.body;
      const out = unwrap(
        await operators.create({ email, role, password: password ?? null }, auditNote(request)),
      );
      return reply.code(201).send(out);
    },
  );

  app.put<{ Params: { operator_id: string }; Body: OperatorRoleBody }>(
    "/admin/operators/:operator_id/role",
    { schema: { params: OperatorParams, body: OperatorRoleBody, response: { 200: One } } },
    async (request) =>
      unwrap(await operators.setRole(request.params.operator_id, request.body.role, auditNote(request))),
  );

  app.put<{ Params: { operator_id: string }; Body: OperatorActiveBody }>(
    "/admin/operators/:operator_id/active",
    { schema: { params: OperatorParams, body: OperatorActiveBody, response: { 200: One } } },
    async (request) =>
      unwrap(
        await operators.setActive(
          request.params.operator_id,
          request.body.active,
          auditNote(request, request.body.reason),
        ),
      ),
  );

  app.put<{ Params: { operator_id: string }; Body: OperatorPasswordBody }>(
    "/admin/operators/:operator_id/password",
    { schema: { params: OperatorParams, body: OperatorPasswordBody, response: { 200: One } } },
    async (request) =>
      unwrap(
        await operators.setPassword(request.params.operator_id, request.body.password, auditNote(request)),
      ),
  );

  app.post<{ Params: { operator_id: string } }>(
    "/admin/operators/:operator_id/sign-in-link",
    { schema: { params: OperatorParams, response: { 201: Type.Object({ result: SignInLinkSchema }) } } },
    async (request, reply) => {
      const link = await operators.issueSignInLink(request.params.operator_id, auditNote(request));
      if (!link.ok) {
        if (link.error === "sign_in_links_off") {
          throw validationError([
            {
              loc: ["path", "operator_id"],
              msg: "Sign-in links are for the sandbox only; this service uses PostgreSQL: set a password instead",
              type: "value_error",
            },
          ]);
        }
        if (link.error === "reason_required") throw reasonRequired();
        if (link.error === "operator_disabled") {
          throw validationError([
            { loc: ["path", "operator_id"], msg: "The operator is disabled", type: "value_error" },
          ]);
        }
        throw new HttpError("not_found");
      }
      // The address the caller reached the admin listener by (the CLI's --admin-url).
      const url = `${request.protocol}://${request.host}/admin/session/link?token=${link.token}`;
      return reply.code(201).send({ result: { token: link.token, url, expires_at: link.expiresAt } });
    },
  );

  const started = (reply: FastifyReply, result: SignInResult) => {
    if (result.ok) return sendSession(reply, result.session, deps.secureCookies);
    if (result.error === "throttled") {
      reply.header("Retry-After", String(result.retryAfterS));
      return sendError(reply, "too_many_requests");
    }
    return sendError(reply, "unauthorized");
  };

  // Sign in: the session's cookie, and the CSRF token to echo on state-changing requests.
  app.post<{ Body: SignInBody }>(
    "/admin/session",
    { schema: { body: SignInBody, response: { 200: OneSession } } },
    async (request, reply) => {
      if (!sameOrigin(request)) return sendError(reply, "forbidden");
      return started(reply, await operators.signIn(request.body.email, request.body.password, request.ip));
    },
  );

  // A one-time sign-in link (the sandbox), followed in a browser: it sets the session's cookie and
  // lands on the console, as a sign-in by the page does (the CSRF token is in every page). A link
  // that is spent, expired or unknown is the 401 of any refused sign-in.
  app.get<{ Querystring: { token: string } }>(
    "/admin/session/link",
    { schema: { querystring: Type.Object({ token: Type.String({ maxLength: 128 }) }) } },
    async (request, reply) => {
      const result = await operators.signInWithLink(request.query.token);
      if (!result.ok) return started(reply, result);
      setSessionCookie(reply, result.session, deps.secureCookies);
      return reply.redirect("/console", 303);
    },
  );

  app.get("/admin/session", { schema: { response: { 200: OneSession } } }, async (request, reply) => {
    const token = readCookie(request, sessionCookie);
    const session = token === null ? null : await operators.authenticate(token);
    // The bearer token has no session to show.
    if (session === null) return sendError(reply, "not_found");
    return {
      result: { operator: session.operator, csrf_token: session.csrfToken, idle_timeout_s: idleTimeoutS },
    };
  });

  // Sign out: the session ends on the server, and the cookie is cleared.
  app.delete("/admin/session", async (request, reply) => {
    const token = readCookie(request, sessionCookie);
    if (token !== null) await operators.signOut(token);
    reply.header("Set-Cookie", sessionCookieHeader("", deps.secureCookies));
    return reply.code(204).send();
  });
}

function setSessionCookie(reply: FastifyReply, session: NewSession, secure: boolean) {
  reply.header("Set-Cookie", sessionCookieHeader(session.token, secure));
  reply.header("Cache-Control", "no-store");
}

function sendSession(reply: FastifyReply, session: NewSession, secure: boolean) {
  setSessionCookie(reply, session, secure);
  return reply.send({
    result: { operator: session.operator, csrf_token: session.csrfToken, idle_timeout_s: idleTimeoutS },
  });
}
