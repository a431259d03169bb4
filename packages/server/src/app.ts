// Builds the partner API and the admin API from services. Never listens: main.ts does, tests use
// app.inject or listen on port 0.

import crypto from "node:crypto";
import http from "node:http";
import type { Socket } from "node:net";
import type { FastifyBaseLogger, FastifyError, FastifyInstance, FastifyRequest, RouteOptions } from "fastify";
import Fastify from "fastify";
import ipaddr from "ipaddr.js";
import { limits } from "./config/limits.ts";
import { adminAccessHook, requireRouteRoles } from "./http/admin-access.ts";
import {
  announcesBody,
  holdBodyUntilAnswered,
  readBodyBytes,
  registerBodyParsers,
} from "./http/body-parsing.ts";
import { type ConnectionCaps, capConnections } from "./http/connection-caps.ts";
import { clientErrorHandler, endWithError, errorHandler, sendError } from "./http/http-error.ts";
import { addInputChecks, methodNotAllowedRoute } from "./http/input-checks.ts";
import { LazySchemas } from "./http/lazy-schemas.ts";
import type { HttpMetrics } from "./http/metrics.ts";
import { registerMultipartParser } from "./http/multipart.ts";
import { registerOpenApi } from "./http/openapi.ts";
import "./http/request-context.ts";
import {
  authenticate,
  isPartnerTarget,
  settleCredentialsHook,
  signatureAuthHook,
} from "./http/signature-auth.ts";
import { validatorCompiler } from "./http/validation.ts";
import {
  adminClientsRoutes,
  adminMoneyRoutes,
  adminRoutes,
  adminTradingRoutes,
} from "./modules/admin/index.ts";
import { auditRoutes } from "./modules/audit/index.ts";
import { catalogRoutes } from "./modules/catalog/index.ts";
import { clientsRoutes } from "./modules/clients/index.ts";
import { consoleAdminRoutes, consoleRoutes } from "./modules/console/index.ts";
import { documentsRoutes, fileRoutes } from "./modules/documents/index.ts";
import { eventsRoutes, eventWebhooksOpenApi } from "./modules/events/index.ts";
import { fundingRoutes } from "./modules/funding/index.ts";
import { balancesRoutes } from "./modules/ledger/index.ts";
import { operatorsRoutes } from "./modules/operators/index.ts";
import { ordersRoutes } from "./modules/orders/index.ts";
import type { PartnerAuthenticator, RateLimiter } from "./modules/partners/index.ts";
import { recordsRoutes } from "./modules/records/index.ts";
import { tradingRoutes } from "./modules/trading/index.ts";
import { webhooksAdminRoutes, webhooksRoutes } from "./modules/webhooks/index.ts";
import type { Services } from "./services.ts";

/** Whether the listeners' address is a loopback one (there, session cookies go without Secure: plain HTTP). */
function isLoopback(host: string): boolean {
  if (host === "localhost") return true;
  return ipaddr.isValid(host) && ipaddr.process(host).range() === "loopback";
}

const requestIdPattern = /^[A-Za-z0-9._:-]{1,128}$/;
/**
 * Methods Node's parser reads but Fastify's router knows not (PROPFIND, SEARCH, LINK, …): taught
 * to the router so that a known path asked with one is a 405, not a 404 (docs/errors.md,
 * `method_not_allowed`). CONNECT never reaches routing (the server's `connect` event, below).
 */
function teachEveryMethod(app: FastifyInstance): void {
  const known = new Set(app.supportedMethods);
  for (const method of http.METHODS) {
    if (method !== "CONNECT" && !known.has(method)) app.addHttpMethod(method, { hasBody: true });
  }
}

/** An absolute-form target (RFC 9112 §3.2.2), which a server must accept: its path is routed. */
const absoluteForm = /^[a-zA-Z][a-zA-Z0-9+.-]*:\/\//;

/**
 * Whether a request is one the service cannot read as a request, though Node parsed it: a target
 * neither a path beginning with `/` nor an absolute URL (`*`, an authority), or an HTTP/1.1 request
 * with no Host or more than one (RFC 9112 §3.2: a 400). docs/errors.md, `bad_request`.
 */
function unreadableRequest(request: FastifyRequest): boolean {
  const raw = request.raw;
  const target = raw.url ?? "";
  if (!target.startsWith("/") && !absoluteForm.test(target)) return true;
  if (raw.httpVersion !== "1.1") return false;
  let hosts = 0;
  const fields = raw.rawHeaders;
  for (let i = 0; i < fields.length; i += 2) {
    const name = fields[i]!;
    if (name.length === 4 && name.toLowerCase() === "host") hosts++;
  }
  return hosts !== 1;
}

interface AppOptions {
  logger: FastifyBaseLogger | false;
  metrics?: HttpMetrics;
  /** Present on the partner app: requests in the /v1/partner space are signed. */
  authenticator?: PartnerAuthenticator;
  /** Present on the partner app unless RATE_LIMITS=off: signed requests draw on budgets. */
  rateLimiter?: RateLimiter | null;
  /** Bounds on receiving a request; limits.ts by default (tests give short ones). */
  timeouts?: Partial<ServerTimeouts>;
  /** Caps on open connections; the configuration's by default (tests give small ones). */
  connectionCaps?: Partial<ConnectionCaps>;
  /**
   * Where the route schemas' compilations wait until first used (http/lazy-schemas.ts); main.ts
   * passes one and warms it once the process listens. A fresh one when absent.
   */
  schemas?: LazySchemas;
}

/** What `/readyz` says beyond the database: whether the process is stopping, which jobs it leads. */
export interface Readiness {
  /** True from the moment the process begins to stop (SIGTERM): it drains and takes no new work. */
  stopping(): boolean;
  /** The background jobs this process competes for, and whether it leads each one now. */
  backgroundJobs(): readonly { job: string; leader: boolean }[];
}

const notRunningJobs: Readiness = { stopping: () => false, backgroundJobs: () => [] };

export interface PartnerAppOptions extends AppOptions {
  /** main.ts gives the process's own; tests without one get a process that never stops. */
  readiness?: Readiness;
}

export interface ServerTimeouts {
  requestHeadersTimeoutMs: number;
  requestReceiveTimeoutMs: number;
  requestTimeoutCheckIntervalMs: number;
  keepAliveIdleMs: number;
}

const serverTimeouts: ServerTimeouts = {
  requestHeadersTimeoutMs: limits.requestHeadersTimeoutMs,
  requestReceiveTimeoutMs: limits.requestReceiveTimeoutMs,
  requestTimeoutCheckIntervalMs: limits.requestTimeoutCheckIntervalMs,
  keepAliveIdleMs: limits.keepAliveIdleMs,
};

/**
 * The routes that take multipart bodies, by method and path shape: a target the router could not
 * decode is given the limit its route would have applied to a multipart body (a parameter segment
 * matches any non-empty text), and the JSON limit otherwise.
 */
class MultipartTargets {
  readonly #routes: { method: string; segments: string[]; limit: number }[] = [];

  add(route: RouteOptions): void {
    const limit = route.config?.multipartBodyBytesMax;
    if (limit === undefined) return;
    const methods = Array.isArray(route.method) ? route.method : [route.method];
    for (const method of methods) this.#routes.push({ method, segments: route.url.split("/"), limit });
  }

  bodyLimit(request: FastifyRequest): number {
    const type = String(request.headers["content-type"] ?? "");
    if (type.split(";")[0]!.trim().toLowerCase() !== "multipart/form-data") return limits.jsonBodyBytesMax;
    const raw = request.raw.url ?? "";
    const q = raw.indexOf("?");
    const got = (q === -1 ? raw : raw.slice(0, q)).split("/");
    const method = request.raw.method ?? "";
    const match = this.#routes.find(
      (r) =>
        r.method === method &&
        r.segments.length === got.length &&
        r.segments.every((s, i) => (s.startsWith(":") ? got[i] !== "" : s === got[i])),
    );
    return match?.limit ?? limits.jsonBodyBytesMax;
  }
}

function baseApp(services: Services, options: AppOptions): FastifyInstance {
  const multipartTargets = new MultipartTargets();
  const trusted = services.config.trustProxy;
  const timeouts = { ...serverTimeouts, ...options.timeouts };
  const schemas = options.schemas ?? new LazySchemas();
  const app = Fastify({
    schemaController: { compilersFactory: { buildSerializer: schemas.serializerFactory() } },
    loggerInstance: options.logger === false ? undefined : options.logger,
    logger: options.logger === false ? false : undefined,
    // While the app closes, a request that still arrives on an open keep-alive connection is
    // served (the store is closed only after the listeners) and answered with `Connection: close`,
    // instead of Fastify's default 503 that a proxy would not retry for a POST.
    return503OnClosing: false,
    // Bounds on receiving a request (docs/decisions.md, "Hardening"): Fastify sets the server's
    // requestTimeout itself (0, none, by default); the headers bound and Node's check interval
    // (30 s by default) can only be given when the server is created.
    requestTimeout: timeouts.requestReceiveTimeoutMs,
    keepAliveTimeout: timeouts.keepAliveIdleMs,
    http: {
      maxHeaderSize: limits.headerBytesMax,
      // A request without Host is answered by unreadableRequest() in the contract's shape; Node's
      // own 400 has no body.
      requireHostHeader: false,
      headersTimeout: timeouts.requestHeadersTimeoutMs,
      requestTimeout: timeouts.requestReceiveTimeoutMs,
      connectionsCheckingInterval: timeouts.requestTimeoutCheckIntervalMs,
    },
    bodyLimit: limits.jsonBodyBytesMax,
    trustProxy: trusted.length > 0 ? [...trusted] : false,
    genReqId: (req) => {
      const given = req.headers["x-request-id"];
      return typeof given === "string" && requestIdPattern.test(given) ? given : crypto.randomUUID();
    },
    // 400, 408 and 431 for requests that never reach routing, in the same body shape.
    clientErrorHandler,
    routerOptions: { maxParamLength: 512 },
    // A target the router cannot decode (bad percent-encoding, an over-long parameter) is a path
    // that does not exist: 404, after authentication in the partner space.
    // Nothing has read its body yet: it is read here first, under the limit the route would
    // apply, so the signature is checked over the bytes sent (413 above the limit).
    frameworkErrors: (_error, request, reply) => {
      reply.header("X-Request-ID", request.id);
      const authenticator = options.authenticator;
      if (authenticator === undefined || !isPartnerTarget(request.raw.url ?? "")) {
        return sendError(reply, "not_found");
      }
      const body = announcesBody(request)
        ? readBodyBytes(request, request.raw, multipartTargets.bodyLimit(request))
        : Promise.resolve(null);
      return body.then(
        (bytes) => {
          request.rawBody = bytes;
          return authenticate(authenticator, request, reply, options.rateLimiter ?? null).then(
            (refused) => refused ?? sendError(reply, "not_found"),
            () => sendError(reply, "internal_error"),
          );
        },
        (err: FastifyError) => errorHandler(err, request, reply),
      );
    },
  });
  const metrics = options.metrics;
  const connections = capConnections(
    app.server,
    {
      perAddressMax: services.config.connectionsPerAddressMax,
      totalMax: services.config.connectionsMax,
      ...options.connectionCaps,
    },
    trusted,
    metrics === undefined ? undefined : (cap) => metrics.connectionRefused(cap),
  );
  metrics?.observeConnections(connections);
  metrics?.observeBodyBudget(services.bodyBudget);
  metrics?.observeSignatureVerifier(services.authenticator.verifierLibrary);
  app.addHook("onRoute", (route) => multipartTargets.add(route));
  app.decorate("bodyBudget", services.bodyBudget);
  app.decorateRequest("bodyHold", null);
  app.decorateRequest("rawBody", null);
  app.decorateRequest("bodyError", null);
  app.decorateRequest("partnerId", null);
  app.decorateRequest("credentialCheck", null);
  app.setValidatorCompiler(schemas.validatorCompiler(validatorCompiler));
  app.setErrorHandler(errorHandler);
  teachEveryMethod(app);
  // A CONNECT (its target an authority, never a path) is answered as a request the service cannot
  // read, instead of Node closing the socket without a word.
  app.server.on("connect", (_request: http.IncomingMessage, socket: Socket) => {
    socket.on("error", () => {});
    endWithError(socket, "bad_request");
  });
  // An expectation other than 100-continue is ignored (RFC 9110 §10.1.1 lets a server answer 417
  // or not): the request is served as if it had none, instead of Node's 417 with no body.
  app.server.on("checkExpectation", (request: http.IncomingMessage, response: http.ServerResponse) => {
    app.server.emit("request", request, response);
  });
  app.addHook("onRequest", async (request, reply) => {
    reply.header("X-Request-ID", request.id);
    if (unreadableRequest(request)) {
      reply.header("Connection", "close");
      return sendError(reply, "bad_request");
    }
    // A body read is held against the process's budget until the answer is done (two header
    // lookups for a request without one).
    if (announcesBody(request)) holdBodyUntilAnswered(request, reply);
  });
  // Draining (docs/operations.md, "Rolling restart"): from the moment the app starts to close, every
  // answer, also that of a request already under way, says `Connection: close`, so a client or
  // proxy never sends another request on a connection the process is about to close.
  let closing = false;
  app.addHook("preClose", async () => {
    closing = true;
  });
  app.addHook("onSend", (_request, reply, payload, done) => {
    if (closing) reply.header("Connection", "close");
    done(null, payload);
  });
  registerBodyParsers(app);
  if (options.metrics) options.metrics.instrument(app);
  return app;
}

/** 405 for a known path asked with a method it does not serve, in the contract's error shape. */
function collectRoutesFor405(app: FastifyInstance): () => void {
  const byUrl = new Map<string, Set<string>>();
  app.addHook("onRoute", (route) => {
    const methods = Array.isArray(route.method) ? route.method : [route.method];
    const set = byUrl.get(route.url) ?? new Set<string>();
    for (const m of methods) set.add(m);
    byUrl.set(route.url, set);
  });
  return () => {
    for (const [url, served] of [...byUrl]) {
      // HEAD is answered with every GET; a path without one gets the 405 for it too.
      const missing = app.supportedMethods.filter(
        (m) => !served.has(m) && !(m === "HEAD" && served.has("GET")),
      );
      if (missing.length === 0) continue;
      // RFC 9110 §15.5.6: a 405 lists the methods the path serves.
      const allow = app.supportedMethods.filter((m) => served.has(m) || (m === "HEAD" && served.has("GET")));
      const allowField = allow.join(", ");
      app.route({
        method: missing,
        url,
        config: methodNotAllowedRoute,
        handler: async (_request, reply) =>
          sendError(reply.header("Allow", allowField), "method_not_allowed"),
      });
    }
  };
}

/** The paths of each partner app's witnessed GET routes, for the tests to enumerate. */
const witnessed = new WeakMap<FastifyInstance, string[]>();

/** The paths of the routes a partner app serves with `witnessesCredentials`. */
export function witnessedRoutes(app: FastifyInstance): readonly string[] {
  return witnessed.get(app) ?? [];
}

/**
 * Refuses, when the app is built, a route whose flags would let a request act before it is
 * authenticated. A witnessed route's handler runs before the row has confirmed the request
 * (db/credential-witness.ts), only its answer is withheld: it must change nothing, so it
 * can only be a GET (its HEAD aside, which is judged by the row first); the tests run every
 * witnessed route under credentials the row refuses and compare the database before and after. A
 * route that records the signature in its write is a POST, and is not also witnessed.
 */
function checkAuthenticationFlags(app: FastifyInstance, route: RouteOptions): void {
  const methods = Array.isArray(route.method) ? route.method : [route.method];
  const config = route.config;
  if (config?.witnessesCredentials === true) {
    if (!methods.every((m) => m === "GET" || m === "HEAD") || config.recordsSignature === true) {
      throw new Error(`${methods.join(",")} ${route.url}: only a GET route may witness its credentials`);
    }
    if (methods.includes("GET")) witnessed.set(app, [...witnessedRoutes(app), route.url]);
  }
  if (config?.recordsSignature === true && !methods.every((m) => m === "POST")) {
    throw new Error(`${methods.join(",")} ${route.url}: only a POST route may record its signature`);
  }
}

export function buildPartnerApp(services: Services, options: PartnerAppOptions): FastifyInstance {
  const app = baseApp(services, {
    ...options,
    authenticator: services.authenticator,
    rateLimiter: services.rateLimiter,
  });
  // Document uploads: the multipart bytes are kept for the signature like any other body.
  registerMultipartParser(app);
  // Order of checks (docs/errors.md): size limits (parsers) → auth → route → schema → the use case.
  // Rate limits come after authentication: a request that cannot be verified is a 401, never a
  // draw on anyone's budget.
  app.addHook("preValidation", signatureAuthHook(services.authenticator, services.rateLimiter));
  // A read authenticated by its own statement answers only once that is settled (db/credential-witness.ts).
  app.addHook("onSend", settleCredentialsHook(services.rateLimiter));
  addInputChecks(app);
  app.addHook("onRoute", (route) => checkAuthenticationFlags(app, route));
  const add405 = collectRoutesFor405(app);
  // GET /openapi.json and /docs (public); set up before the routes the document describes.
  registerOpenApi(app, eventWebhooksOpenApi());

  app.get("/healthz", async () => ({ status: "ok" }));
  // Readiness (docs/operations.md, "Health, logs, metrics"): 200 while the process can serve (it
  // listens, its schema is current, the database answers), 503 while the database does not answer
  // or once the process is stopping; either way the background jobs it leads.
  const readiness = options.readiness ?? notRunningJobs;
  app.get("/readyz", async (_request, reply) => {
    const backgroundJobs = readiness.backgroundJobs().map(({ job, leader }) => ({ job, leader }));
    if (readiness.stopping())
      return reply.code(503).send({ status: "stopping", background_jobs: backgroundJobs });
    const ready = await services.database.db
      .selectFrom("schema_migrations")
      .select("version")
      .limit(1)
      .execute()
      .then(() => true)
      .catch(() => false);
    return reply
      .code(ready ? 200 : 503)
      .send({ status: ready ? "ready" : "unavailable", background_jobs: backgroundJobs });
  });
  catalogRoutes(app, services.catalog);
  fundingRoutes(app, services.funding);
  balancesRoutes(app, services.balances);
  ordersRoutes(app, services.orders);
  tradingRoutes(app, services.trading);
  clientsRoutes(app, services.clients);
  documentsRoutes(app, services.documents);
  fileRoutes(app, services.documents);
  eventsRoutes(app, services.events);
  webhooksRoutes(app, services.webhooks);
  add405();

  app.setNotFoundHandler(async (_request, reply) => sendError(reply, "not_found"));
  return app;
}

export interface AdminAppOptions extends AppOptions {
  adminToken: string;
  /** Prometheus text of this process (or of all API processes, aggregated). */
  metricsText: () => Promise<{ contentType: string; body: string }>;
}

export function buildAdminApp(services: Services, options: AdminAppOptions): FastifyInstance {
  const app = baseApp(services, {
    logger: options.logger,
    timeouts: options.timeouts ?? {},
    schemas: options.schemas,
  });
  // Bearer token or console session, CSRF, then the route's role (http/admin-access.ts).
  app.decorateRequest("actor", null);
  app.decorateRequest("operatorSession", null);
  requireRouteRoles(app);
  app.addHook("onRequest", adminAccessHook(services.operators, options.adminToken));
  addInputChecks(app);
  // A known path asked with another method is a 405, as on the partner listener; who may learn it
  // is decided by adminAccessHook (after authentication, unless the path is a public one).
  const add405 = collectRoutesFor405(app);
  app.get("/healthz", async () => ({ status: "ok" }));
  app.get("/metrics", async (_request, reply) => {
    const m = await options.metricsText();
    return reply.type(m.contentType).send(m.body);
  });
  adminRoutes(app, services);
  adminMoneyRoutes(app, services);
  adminTradingRoutes(app, services);
  adminClientsRoutes(app, services);
  webhooksAdminRoutes(app, services.webhooks);
  operatorsRoutes(app, { operators: services.operators, secureCookies: !isLoopback(services.config.host) });
  auditRoutes(app, services);
  recordsRoutes(app, services);
  consoleRoutes(app, services);
  consoleAdminRoutes(app, services);
  add405();
  app.setNotFoundHandler(async (_request, reply) => sendError(reply, "not_found"));
  return app;
}
