// Who may call the admin API, and what each may do (docs/decisions.md, "Operator accounts").
//
// A request is either a script's, with the bearer admin token (it acts as admin), or a console
// session's, with its cookie. A session's state-changing request must also echo the session's CSRF
// token in X-CSRF-Token, and come from the admin listener's own origin when it names one. Then the
// route's role decides: every admin route is in `adminRouteRoles` (a route registered without an
// entry stops the app from starting), and a role may do what the roles before it may
// (viewer < compliance < admin).

import crypto from "node:crypto";
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import type { OperatorRole } from "../db/schema.ts";
import type { AuditNote } from "../modules/audit/index.ts";
import {
  type Actor,
  type LiveSession,
  type OperatorsService,
  roleAllows,
} from "../modules/operators/index.ts";
import { HttpError, sendError, validationError } from "./http-error.ts";

declare module "fastify" {
  interface FastifyRequest {
    /** Who is calling the admin API (set once the request is authenticated). */
    actor: Actor | null;
    /** The console session of the request, when it came with the session cookie. */
    operatorSession: LiveSession | null;
  }
}

/** Routes anyone may call: probes, and the sign-in routes themselves. */
export const publicAdminRoutes: ReadonlySet<string> = new Set([
  "GET /healthz",
  "GET /metrics",
  "POST /admin/session",
  "GET /admin/session/link",
  // The console's sign-in page and its two bundled files.
  "GET /console/sign-in",
  "GET /console/assets/:file",
]);

/**
 * The paths of the public routes: anyone may learn they exist (a GET of /healthz says so), so a
 * method they do not serve is a 405 for anyone, as on the partner listener's public paths.
 */
const publicAdminPaths: ReadonlySet<string> = new Set(
  [...publicAdminRoutes].map((key) => key.slice(key.indexOf(" ") + 1)),
);

/**
 * Every authenticated admin route and the least role it needs. viewer reads everything (except
 * the operator accounts); compliance changes clients' statuses and active flags; admin does the
 * rest: partners, keys, IP allow-lists, the catalog, prices, fees, operator accounts.
 */
export const adminRouteRoles: Readonly<Record<string, OperatorRole>> = {
  // The console session itself: any signed-in operator may see it and sign out.
  "GET /admin/session": "viewer",
  "DELETE /admin/session": "viewer",
  // Partners, their keys and allow-lists.
  "GET /admin/partners": "viewer",
  "GET /admin/partners/:partner_id": "viewer",
  "GET /admin/partners/:partner_id/keys": "viewer",
  "POST /admin/partners": "admin",
  "PUT /admin/partners/:partner_id/key": "admin",
  "POST /admin/partners/:partner_id/keys": "admin",
  "DELETE /admin/partners/:partner_id/keys/:key_id": "admin",
  "PUT /admin/partners/:partner_id/ips": "admin",
  "PUT /admin/partners/:partner_id/active": "admin",
  "PUT /admin/partners/:partner_id/limits": "admin",
  // Partners' webhook endpoints: listed, and disabled or enabled again.
  "GET /admin/webhook-endpoints": "viewer",
  "PUT /admin/webhook-endpoints/:endpoint_id/enabled": "admin",
  // Clients: compliance decisions.
  "GET /admin/partners/:partner_id/clients/:partner_client_id": "viewer",
  "PUT /admin/partners/:partner_id/clients/:partner_client_id/status": "compliance",
  "PUT /admin/partners/:partner_id/clients/:partner_client_id/active": "compliance",
  // Catalog, prices and fees.
  "PUT /admin/assets/:asset_id": "admin",
  "PUT /admin/pairs/:pair_id": "admin",
  "PUT /admin/pairs/:pair_id/price": "admin",
  "POST /admin/pairs/:pair_id/resume": "admin",
  "PUT /admin/partners/:partner_id/pairs/:pair_id": "admin",
  "PUT /admin/partners/:partner_id/fees": "admin",
  // The ledger.
  "GET /admin/ledger/check": "viewer",
  // Orders across partners, and one order with its postings (docs/decisions.md, "Back office records").
  "GET /admin/orders": "viewer",
  "GET /admin/orders/:order_id": "viewer",
  // The audit trail.
  "GET /admin/audit": "viewer",
  // The console's pages (its changes go through the routes above, with their roles).
  "GET /console": "viewer",
  "GET /console/": "viewer",
  "GET /console/clients": "viewer",
  "GET /console/clients/:partner_id/:partner_client_id": "viewer",
  "GET /console/audit": "viewer",
  // The console's record pages (docs/decisions.md, "Back office records"); a document's file is
  // KYC data every role may read, and each reading is on the audit trail.
  "GET /console/orders": "viewer",
  "GET /console/orders/:order_id": "viewer",
  "GET /console/ledger": "viewer",
  "GET /console/documents/:document_id/:side": "viewer",
  // The console's partner and catalog pages (forms shown to admin only).
  "GET /console/partners": "viewer",
  "GET /console/partners/:partner_id": "viewer",
  "GET /console/catalog": "viewer",
  "GET /console/pairs/:pair_id": "viewer",
  // Operator accounts.
  "GET /admin/operators": "admin",
  "POST /admin/operators": "admin",
  "PUT /admin/operators/:operator_id/role": "admin",
  "PUT /admin/operators/:operator_id/active": "admin",
  "PUT /admin/operators/:operator_id/password": "admin",
  "POST /admin/operators/:operator_id/sign-in-link": "admin",
};

export const sessionCookie = "counterpart_session";

/** Who made this admin request, and the reason it gives, for the audit trail. */
export function auditNote(request: FastifyRequest, reason?: string | null): AuditNote {
  // Set by adminAccessHook on every route that is not public; a route that changes state is never public.
  if (request.actor === null) throw new HttpError("unauthorized");
  return { actor: request.actor, reason: reason ?? null };
}

/** The 422 of a change that needs a reason and was given none. */
export function reasonRequired(): HttpError {
  return validationError([
    {
      loc: ["body", "reason"],
      msg: "A reason is required for this change (it goes on the audit trail)",
      type: "missing",
    },
  ]);
}
const safeMethods = new Set(["GET", "HEAD", "OPTIONS"]);

/** The value of one cookie of the Cookie header, or null. */
export function readCookie(request: FastifyRequest, name: string): string | null {
  const header = request.headers.cookie;
  if (typeof header !== "string") return null;
  for (const part of header.split(";")) {
    const eq = part.indexOf("=");
    if (eq === -1) continue;
    if (part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim();
  }
  return null;
}

export function sessionCookieHeader(value: string, secure: boolean): string {
  const clear = value === "" ? "; Max-Age=0" : "";
  return `${sessionCookie}=${value}; Path=/; HttpOnly; SameSite=Strict${secure ? "; Secure" : ""}${clear}`;
}

function sameBytes(a: string, b: string): boolean {
  const x = crypto.createHash("sha256").update(a).digest();
  const y = crypto.createHash("sha256").update(b).digest();
  return crypto.timingSafeEqual(x, y) && a === b;
}

/**
 * Whether the request's Origin (or, without one, its Referer) is the admin listener's own. A
 * browser always sends Origin on a cross-site POST/PUT/DELETE; a request naming neither is not
 * a browser's cross-site one, and the CSRF token decides.
 */
export function sameOrigin(request: FastifyRequest): boolean {
  // An empty Origin is none: the Referer, if any, is checked instead.
  const origin = request.headers.origin || request.headers.referer;
  if (origin === undefined || origin === "") return true;
  const host = request.headers.host;
  if (host === undefined) return false;
  try {
    // Both through URL, so that a default port written on one side only (":80") compares equal.
    return new URL(origin).host === new URL(`http://${host}`).host;
  } catch {
    return false;
  }
}

function routeKey(request: FastifyRequest): string | null {
  const url = request.routeOptions.url;
  if (url === undefined) return null;
  const method = request.method === "HEAD" ? "GET" : request.method;
  return `${method} ${url}`;
}

/** Stops the app from starting when an admin route has no role (nothing is left open by omission). */
export function requireRouteRoles(app: FastifyInstance): void {
  app.addHook("onRoute", (route) => {
    const methods = Array.isArray(route.method) ? route.method : [route.method];
    // The 405 answers (app.ts) serve no method: they need no role.
    if (route.config?.methodNotAllowed === true) return;
    for (const method of methods) {
      if (method === "HEAD") continue;
      const key = `${method} ${route.url}`;
      if (!publicAdminRoutes.has(key) && adminRouteRoles[key] === undefined) {
        throw new Error(`admin route ${key} has no role in http/admin-access.ts`);
      }
    }
  });
}

/** The onRequest hook of the admin app: authentication, CSRF, then the route's role. */
export function adminAccessHook(operators: OperatorsService, adminToken: string) {
  const expected = crypto.createHash("sha256").update(adminToken).digest();
  return async (request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply | undefined> => {
    const key = routeKey(request);
    if (key !== null && publicAdminRoutes.has(key)) return undefined;
    // A method a known path does not serve (app.ts answers 405). On a public path anyone may learn
    // it; on any other path authentication comes first, as in the partner listener's signed space
    // (docs/errors.md, "Order of checks"): without credentials it is the 401 any unknown path
    // gets, so the 405 tells no more than today's answer about which paths exist.
    const methodNotAllowed = request.routeOptions.config?.methodNotAllowed === true;
    if (methodNotAllowed && publicAdminPaths.has(request.routeOptions.url ?? "")) return undefined;

    let actor: Actor | null = null;
    const authorization = request.headers.authorization;
    if (authorization !== undefined) {
      const token = authorization.startsWith("Bearer ") ? authorization.slice(7) : "";
      const digest = crypto.createHash("sha256").update(token).digest();
      if (crypto.timingSafeEqual(digest, expected)) actor = { kind: "token", role: "admin" };
    } else {
      const cookie = readCookie(request, sessionCookie);
      const session = cookie === null ? null : await operators.authenticate(cookie);
      if (session !== null) {
        if (!safeMethods.has(request.method)) {
          const echoed = request.headers["x-csrf-token"];
          if (typeof echoed !== "string" || !sameBytes(echoed, session.csrfToken) || !sameOrigin(request)) {
            return sendError(reply, "forbidden");
          }
        }
        actor = session.actor;
        request.operatorSession = session;
      }
    }
    // A console page asked without a session goes to the sign-in page.
    if (actor === null && key?.startsWith("GET /console") === true) {
      return reply.redirect("/console/sign-in", 303);
    }
    if (actor === null) return sendError(reply, "unauthorized");
    // An unknown path is a 404, and a method its path does not serve a 405, for whoever is signed
    // in, whatever the role (routing answers them after this hook; neither does anything).
    if (key === null || methodNotAllowed) {
      request.actor = actor;
      return undefined;
    }
    const need = adminRouteRoles[key];
    if (need === undefined || !roleAllows(actor.role, need)) return sendError(reply, "forbidden");
    request.actor = actor;
    return undefined;
  };
}
