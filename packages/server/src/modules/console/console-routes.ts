// The back office console (server-rendered HTML on the admin listener, never the partner port):
// sign-in, clients looked up across partners, a client's page with its status and activation
// changes and its history, and the audit trail. Pages are paged on the server. Every change is
// sent by the page to the admin API's own routes, so the console, the API and the CLI share one
// implementation (and one role check) of each action. All assets are bundled (assets/).

import fs from "node:fs";
import path from "node:path";
import type { FieldError } from "@counterpart/protocol";
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { Type } from "typebox";
import { limits } from "../../config/limits.ts";
import type { ClientStatus } from "../../db/schema.ts";
import { errorHandler, HttpError } from "../../http/http-error.ts";
import { toFieldErrors } from "../../http/validation.ts";
import type { AuditService } from "../audit/index.ts";
import type { ClientsService } from "../clients/index.ts";
import { roleAllows } from "../operators/index.ts";
import type { RecordsService } from "../records/index.ts";
import {
  badRequestPage,
  clientPage,
  clientsPage,
  notFoundPage,
  signInPage,
  statuses,
} from "./console-pages.ts";
import { clientRecordsHtml, consoleRecordsRoutes } from "./console-records-routes.ts";

const assets: Record<string, { type: string; body: Buffer }> = {
  "console.css": {
    type: "text/css; charset=utf-8",
    body: fs.readFileSync(path.join(import.meta.dirname, "assets", "console.css")),
  },
  "console.js": {
    type: "text/javascript; charset=utf-8",
    body: fs.readFileSync(path.join(import.meta.dirname, "assets", "console.js")),
  },
};

/** Pages allow only this listener's own files, and are never framed or cached. */
export function html(reply: FastifyReply, body: string, status = 200) {
  return reply
    .code(status)
    .header(
      "Content-Security-Policy",
      "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; frame-src 'self'; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
    )
    .header("X-Frame-Options", "DENY")
    .header("X-Content-Type-Options", "nosniff")
    .header("Referrer-Policy", "same-origin")
    .header("Cache-Control", "no-store")
    .type("text/html; charset=utf-8")
    .send(body);
}

export function sessionOf(request: FastifyRequest) {
  const s = request.operatorSession;
  return s === null ? null : { operator: s.operator, csrf: s.csrfToken };
}

type ConsoleSession = NonNullable<ReturnType<typeof sessionOf>>;

/** Where the first 422 of a request was, when the error is one: `["query", name]`, `["path", name]`. */
function refusedAt(error: FastifyError): FieldError["loc"] | null {
  if (error instanceof HttpError) {
    // A path parameter that names nothing (empty, a NUL: http/input-checks.ts) is a path's 404.
    if (error.errorName === "not_found") return ["path"];
    return error.errorName === "validation_error" ? ((error.detail as FieldError[])[0]?.loc ?? null) : null;
  }
  const v = error as FastifyError & { validation?: unknown; validationContext?: string };
  if (!Array.isArray(v.validation)) return null;
  const found = toFieldErrors(v.validation as Parameters<typeof toFieldErrors>[0], v.validationContext ?? "");
  return found[0]?.loc ?? null;
}

/**
 * What a console page says of a filter it cannot read, by its name: that it is given more than
 * once, else the page's own words for it (`messages`), else that it is not valid.
 */
function filterMessage(request: FastifyRequest, name: string, messages: Record<string, string>): string {
  const given = (request.query as Record<string, unknown> | null)?.[name];
  if (Array.isArray(given)) return `The filter “${name}” is given more than once; give it once.`;
  return messages[name] ?? `The filter “${name}” is not valid.`;
}

/**
 * The error handler of every console page (docs/decisions.md, "Back office records"). A filter the
 * page cannot read is a 400 page that says which and lists nothing, never the admin API's JSON 422:
 * whether the schema refused it (a repeated filter, a value too long, a page link's id that is not
 * a number) or the checks every route's input gets first (a `%` escape that is not UTF-8, a NUL).
 * A path value that names nothing (`/console/orders/abc`) is the page's 404, as an absent record
 * is. Anything else is the service's own answer. Without a session, as the pages themselves, the
 * sign-in page.
 */
export function consolePageErrors(
  badFilter: (session: ConsoleSession, message: string) => string = badRequestPage,
  messages: Record<string, string> = {},
) {
  return (error: FastifyError, request: FastifyRequest, reply: FastifyReply) => {
    const loc = refusedAt(error);
    if (loc === null || (loc[0] !== "query" && loc[0] !== "path")) return errorHandler(error, request, reply);
    const session = sessionOf(request);
    // The sign-in page is read signed out: its 400 is shown there, without the menu.
    if (request.routeOptions.url === "/console/sign-in") {
      return html(reply, badRequestPage(null, filterMessage(request, String(loc[1] ?? ""), messages)), 400);
    }
    if (session === null) return reply.redirect("/console/sign-in", 303);
    if (loc[0] === "path") return html(reply, notFoundPage(session), 404);
    return html(reply, badFilter(session, filterMessage(request, String(loc[1] ?? ""), messages)), 400);
  };
}

/**
 * Gives every console page registered after this call (by any module) the error handler above,
 * unless it has its own: a page added later cannot answer JSON for a bad filter by omission. The
 * bundled files and the 405 answers are not pages.
 */
function everyConsolePageAnswersHtml(app: FastifyInstance): void {
  const generic = consolePageErrors();
  app.addHook("onRoute", (route) => {
    if (!route.url.startsWith("/console") || route.url === "/console/assets/:file") return;
    if (route.config?.methodNotAllowed === true || route.errorHandler !== undefined) return;
    route.errorHandler = generic;
  });
}

const pageQuery = { page: Type.Optional(Type.Integer({ minimum: 1, maximum: 1_000_000 })) };

export interface ConsoleDeps {
  readonly clients: ClientsService;
  readonly audit: AuditService;
  readonly records: RecordsService;
}

export function consoleRoutes(app: FastifyInstance, { clients, audit, records }: ConsoleDeps): void {
  const pageSize = limits.pageSizeMax / 2;
  everyConsolePageAnswersHtml(app);

  app.get("/console/sign-in", async (_request, reply) => html(reply, signInPage()));

  app.get<{ Params: { file: string } }>("/console/assets/:file", async (request, reply) => {
    const asset = assets[request.params.file];
    if (asset === undefined) return reply.code(404).type("text/plain").send("Not Found");
    return reply
      .type(asset.type)
      .header("Cache-Control", "no-cache")
      .header("X-Content-Type-Options", "nosniff")
      .send(asset.body);
  });

  // The console's address, with or without the trailing slash (docs/operations.md gives
  // `/console/`): without a session the access hook sends either to the sign-in page.
  for (const url of ["/console", "/console/"]) {
    app.get(url, async (_request, reply) => reply.redirect("/console/clients", 303));
  }

  app.get<{ Querystring: { q?: string; partner?: string; status?: string; page?: number } }>(
    "/console/clients",
    {
      errorHandler: consolePageErrors((session, message) =>
        clientsPage(
          session,
          { q: "", partner: "", status: "" },
          [],
          {
            page: 1,
            pageSize,
            total: 0,
            href: () => "/console/clients",
          },
          message,
        ),
      ),
      schema: {
        querystring: Type.Object({
          q: Type.Optional(Type.String({ maxLength: 255 })),
          partner: Type.Optional(Type.String({ maxLength: 64 })),
          status: Type.Optional(Type.String({ maxLength: 32 })),
          ...pageQuery,
        }),
      },
    },
    async (request, reply) => {
      const session = sessionOf(request);
      if (session === null) return reply.redirect("/console/sign-in", 303);
      const q = (request.query.q ?? "").trim();
      const partner = (request.query.partner ?? "").trim();
      const status = (statuses as readonly string[]).includes(request.query.status ?? "")
        ? (request.query.status as ClientStatus)
        : null;
      const page = request.query.page ?? 1;
      const found = await clients.search(
        { q: q === "" ? null : q, partnerId: partner === "" ? null : partner, status },
        page,
        pageSize,
      );
      const href = (n: number) =>
        `/console/clients?${new URLSearchParams({ q, partner, status: status ?? "", page: String(n) })}`;
      return html(
        reply,
        clientsPage(session, { q, partner, status: status ?? "" }, found.items, {
          page,
          pageSize,
          total: found.total,
          href,
        }),
      );
    },
  );

  app.get<{ Params: { partner_id: string; partner_client_id: string } }>(
    "/console/clients/:partner_id/:partner_client_id",
    {
      schema: {
        params: Type.Object({
          partner_id: Type.String({ maxLength: 64 }),
          partner_client_id: Type.String({ maxLength: 255 }),
        }),
      },
    },
    async (request, reply) => {
      const session = sessionOf(request);
      if (session === null) return reply.redirect("/console/sign-in", 303);
      const { partner_id, partner_client_id } = request.params;
      const shown = await clients.show(partner_id, partner_client_id);
      if (!shown.ok) return html(reply, notFoundPage(session), 404);
      const history = await audit.list(
        {
          actor: null,
          action: null,
          targetType: "client",
          targetId: `${partner_id}/${partner_client_id}`,
          from: null,
          to: null,
        },
        1,
        limits.pageSizeMax,
      );
      const mayChange = roleAllows(session.operator.role, "compliance");
      const extra = await clientRecordsHtml(records, partner_id, partner_client_id);
      return html(reply, clientPage(session, partner_id, shown.client, history.items, mayChange, extra));
    },
  );

  consoleRecordsRoutes(app, { records, audit });
}
