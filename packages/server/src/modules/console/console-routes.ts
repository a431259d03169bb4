// The back office console (server-rendered HTML on the admin listener, never the partner port):
// sign-in, clients looked up across partners, a client's page with its status and activation
// changes and its history, and the audit trail. Pages are paged on the server. Every change is
// sent by the page to the admin API's own routes, so the console, the API and the CLI share one
// implementation (and one role check) of each action. All assets are bundled (assets/).

import fs from "node:fs";
import path from "node:path";
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { Type } from "typebox";
import { limits } from "../../config/limits.ts";
import type { ClientStatus } from "../../db/schema.ts";
import type { AuditService } from "../audit/index.ts";
import type { ClientsService } from "../clients/index.ts";
import { roleAllows } from "../operators/index.ts";
import type { RecordsService } from "../records/index.ts";
import { clientPage, clientsPage, notFoundPage, signInPage, statuses } from "./console-pages.ts";
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

const pageQuery = { page: Type.Optional(Type.Integer({ minimum: 1, maximum: 1_000_000 })) };

export interface ConsoleDeps {
  readonly clients: ClientsService;
  readonly audit: AuditService;
  readonly records: RecordsService;
}

export function consoleRoutes(app: FastifyInstance, { clients, audit, records }: ConsoleDeps): void {
  const pageSize = limits.pageSizeMax / 2;

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
