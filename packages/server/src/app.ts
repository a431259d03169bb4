// Builds the partner API and the admin API from services. Never listens: main.ts does, tests use
// app.inject or listen on port 0.

import crypto from "node:crypto";
import type { FastifyBaseLogger, FastifyInstance } from "fastify";
import Fastify from "fastify";
import { limits } from "./config/limits.ts";
import { checkString, registerBodyParsers } from "./http/body-parsing.ts";
import { errorHandler, sendError, validationError } from "./http/http-error.ts";
import type { HttpMetrics } from "./http/metrics.ts";
import { registerMultipartParser } from "./http/multipart.ts";
import { registerOpenApi } from "./http/openapi.ts";
import "./http/request-context.ts";
import { authenticate, isPartnerTarget, signatureAuthHook } from "./http/signature-auth.ts";
import { validatorCompiler } from "./http/validation.ts";
import { adminClientsRoutes } from "./modules/admin/admin-clients-routes.ts";
import { adminMoneyRoutes } from "./modules/admin/admin-money-routes.ts";
import { adminRoutes } from "./modules/admin/admin-routes.ts";
import { adminTradingRoutes } from "./modules/admin/admin-trading-routes.ts";
import { catalogRoutes } from "./modules/catalog/index.ts";
import { clientsRoutes } from "./modules/clients/index.ts";
import { documentsRoutes, fileRoutes } from "./modules/documents/index.ts";
import { fundingRoutes } from "./modules/funding/index.ts";
import { balancesRoutes } from "./modules/ledger/index.ts";
import { ordersRoutes } from "./modules/orders/index.ts";
import type { PartnerAuthenticator } from "./modules/partners/index.ts";
import { tradingRoutes } from "./modules/trading/index.ts";
import type { Services } from "./services.ts";

const requestIdPattern = /^[A-Za-z0-9._:-]{1,128}$/;
const allMethods = ["GET", "POST", "PUT", "DELETE", "PATCH", "OPTIONS"] as const;

interface AppOptions {
  logger: FastifyBaseLogger | false;
  metrics?: HttpMetrics;
  /** Present on the partner app: requests in the /v1/partner space are signed. */
  authenticator?: PartnerAuthenticator;
}

function baseApp(services: Services, options: AppOptions): FastifyInstance {
  const trusted = services.config.trustProxy;
  const app = Fastify({
    loggerInstance: options.logger === false ? undefined : options.logger,
    logger: options.logger === false ? false : undefined,
    http: { maxHeaderSize: limits.headerBytesMax },
    bodyLimit: limits.jsonBodyBytesMax,
    trustProxy: trusted.length > 0 ? [...trusted] : false,
    genReqId: (req) => {
      const given = req.headers["x-request-id"];
      return typeof given === "string" && requestIdPattern.test(given) ? given : crypto.randomUUID();
    },
    // 431 and other malformed requests that never reach routing get the same body shape.
    clientErrorHandler: (err, socket) => {
      if ((err as NodeJS.ErrnoException).code === "ECONNRESET" || socket.destroyed || !socket.writable)
        return;
      const overflow = (err as NodeJS.ErrnoException).code === "HPE_HEADER_OVERFLOW";
      const body = overflow
        ? '{"code":431,"msg":"Request Header Fields Too Large","msg_detail":null}'
        : '{"code":400,"msg":"Bad Request","msg_detail":null}';
      const status = overflow ? "431 Request Header Fields Too Large" : "400 Bad Request";
      socket.end(
        `HTTP/1.1 ${status}\r\nConnection: close\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
      );
    },
    routerOptions: { maxParamLength: 512 },
    // A target the router cannot decode (bad percent-encoding, an over-long parameter) is a path
    // that does not exist: 404, after authentication in the partner space.
    frameworkErrors: (_error, request, reply) => {
      const authenticator = options.authenticator;
      if (authenticator === undefined || !isPartnerTarget(request.raw.url ?? "")) {
        return sendError(reply, "not_found");
      }
      return authenticate(authenticator, request, reply).then(
        (refused) => refused ?? sendError(reply, "not_found"),
        () => sendError(reply, "internal_error"),
      );
    },
  });
  app.decorateRequest("rawBody", null);
  app.decorateRequest("bodyError", null);
  app.decorateRequest("partnerId", null);
  app.setValidatorCompiler(validatorCompiler);
  app.setErrorHandler(errorHandler);
  app.addHook("onRequest", async (request, reply) => {
    reply.header("X-Request-ID", request.id);
  });
  registerBodyParsers(app);
  if (options.metrics) options.metrics.instrument(app);
  return app;
}

/** 405 for a known path asked with a method it does not serve, in the spec's error shape. */
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
      const missing = allMethods.filter((m) => !served.has(m));
      if (missing.length === 0) continue;
      app.route({
        method: missing,
        url,

        handler: async (_request, reply) => sendError(reply, "method_not_allowed"),
      });
    }
  };
}

/** Unreadable bodies, NUL bytes and broken Unicode in any input: 422, after authentication. */
function addInputChecks(app: FastifyInstance): void {
  app.addHook("preValidation", async (request) => {
    if (request.bodyError !== null) throw validationError(request.bodyError);
    for (const [part, values] of [
      ["query", request.query],
      ["path", request.params],
    ] as const) {
      if (values === null || typeof values !== "object") continue;
      for (const [name, value] of Object.entries(values as Record<string, unknown>)) {
        for (const v of Array.isArray(value) ? value : [value]) {
          const problem = typeof v === "string" ? checkString(v, [part, name]) : null;
          if (problem !== null) throw validationError([problem]);
        }
      }
    }
  });
}

export function buildPartnerApp(services: Services, options: AppOptions): FastifyInstance {
  const app = baseApp(services, { ...options, authenticator: services.authenticator });
  // Document uploads: the multipart bytes are kept for the signature like any other body.
  registerMultipartParser(app);
  // Order of checks (DESIGN): size limits (parsers) → auth → route → schema → the use case.
  app.addHook("preValidation", signatureAuthHook(services.authenticator));
  addInputChecks(app);
  const add405 = collectRoutesFor405(app);
  // GET /openapi.json and /docs (public); set up before the routes the document describes.
  registerOpenApi(app);

  app.get("/healthz", async () => ({ status: "ok" }));
  app.get("/readyz", async (_request, reply) => {
    const ready = await services.database.db
      .selectFrom("schema_migrations")
      .select("version")
      .limit(1)
      .execute()
      .then(() => true)
      .catch(() => false);
    return reply.code(ready ? 200 : 503).send({ status: ready ? "ready" : "unavailable" });
  });
  catalogRoutes(app, services.catalog);
  fundingRoutes(app, services.funding);
  balancesRoutes(app, services.balances);
  ordersRoutes(app, services.orders);
  tradingRoutes(app, services.trading);
  clientsRoutes(app, services.clients);
  documentsRoutes(app, services.documents);
  fileRoutes(app, services.documents);
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
  const app = baseApp(services, { logger: options.logger });
  const expected = crypto.createHash("sha256").update(options.adminToken).digest();
  app.addHook("onRequest", async (request, reply) => {
    if (request.url === "/healthz" || request.url === "/metrics") return;
    const given = request.headers.authorization ?? "";
    const token = given.startsWith("Bearer ") ? given.slice(7) : "";
    const digest = crypto.createHash("sha256").update(token).digest();
    if (!crypto.timingSafeEqual(digest, expected)) {
      await sendError(reply, "unauthorized");
      return reply;
    }
  });
  addInputChecks(app);
  app.get("/healthz", async () => ({ status: "ok" }));
  app.get("/metrics", async (_request, reply) => {
    const m = await options.metricsText();
    return reply.type(m.contentType).send(m.body);
  });
  adminRoutes(app, services);
  adminMoneyRoutes(app, services);
  adminTradingRoutes(app, services);
  adminClientsRoutes(app, services);
  app.setNotFoundHandler(async (_request, reply) => sendError(reply, "not_found"));
  return app;
}
