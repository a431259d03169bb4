// The console's partner and catalog pages (read through the services; every change the pages make
// is sent to the admin API's own routes, with their roles and audit entries). Only admin may change
// partners, keys, allow-lists, the catalog, prices and fees; viewer and compliance see the pages
// without forms.

import type { FastifyInstance, FastifyRequest } from "fastify";
import { Type } from "typebox";
import { limits } from "../../config/limits.ts";
import { isUuid } from "../../platform/uuid.ts";
import type { AuditService } from "../audit/index.ts";
import type { CatalogService, PriceFeed } from "../catalog/index.ts";
import { roleAllows } from "../operators/index.ts";
import type { PartnersService } from "../partners/index.ts";
import type { TradingAdminService } from "../trading/index.ts";
import { partnerPage, partnersPage } from "./console-admin-pages.ts";
import { catalogPage, pairPage } from "./console-catalog-pages.ts";
import { notFoundPage } from "./console-pages.ts";
import { html } from "./console-routes.ts";

export interface ConsoleAdminDeps {
  readonly partners: PartnersService;
  readonly tradingAdmin: TradingAdminService;
  readonly catalog: CatalogService;
  readonly priceFeed: PriceFeed | null;
  readonly audit: AuditService;
}

function sessionOf(request: FastifyRequest) {
  const s = request.operatorSession;
  return s === null ? null : { operator: s.operator, csrf: s.csrfToken };
}

export function consoleAdminRoutes(app: FastifyInstance, deps: ConsoleAdminDeps): void {
  const { partners, tradingAdmin, catalog, audit } = deps;
  const history = async (targetType: string, targetId: string) =>
    (
      await audit.list(
        { actor: null, action: null, targetType, targetId, from: null, to: null },
        1,
        limits.pageSizeMax,
      )
    ).items;

  app.get("/console/partners", async (request, reply) => {
    const session = sessionOf(request);
    if (session === null) return reply.redirect("/console/sign-in", 303);
    const mayChange = roleAllows(session.operator.role, "admin");
    return html(reply, partnersPage(session, await partners.list(), mayChange));
  });

  app.get<{ Params: { partner_id: string } }>(
    "/console/partners/:partner_id",
    { schema: { params: Type.Object({ partner_id: Type.String({ maxLength: 64 }) }) } },
    async (request, reply) => {
      const session = sessionOf(request);
      if (session === null) return reply.redirect("/console/sign-in", 303);
      const id = request.params.partner_id;
      const shown = isUuid(id) ? await partners.show(id) : null;
      const keys = isUuid(id) ? await partners.listKeys(id) : null;
      const fees = isUuid(id) ? await tradingAdmin.partnerFees(id) : null;
      if (shown === null || !shown.ok || keys === null || !keys.ok || fees === null) {
        return html(reply, notFoundPage(session), 404);
      }
      const mayChange = roleAllows(session.operator.role, "admin");
      return html(
        reply,
        partnerPage(
          session,
          shown.partner,
          keys.keys,
          fees,
          {
            ids: (await tradingAdmin.listPairs()).map((pair) => pair.id),
            own: await tradingAdmin.partnerPairs(id),
          },
          await history("partner", id),
          mayChange,
        ),
      );
    },
  );

  app.get("/console/catalog", async (request, reply) => {
    const session = sessionOf(request);
    if (session === null) return reply.redirect("/console/sign-in", 303);
    const mayChange = roleAllows(session.operator.role, "admin");
    return html(
      reply,
      catalogPage(session, await catalog.listAssets(), await tradingAdmin.listPairs(), mayChange),
    );
  });

  app.get<{ Params: { pair_id: string } }>(
    "/console/pairs/:pair_id",
    { schema: { params: Type.Object({ pair_id: Type.String({ maxLength: 32 }) }) } },
    async (request, reply) => {
      const session = sessionOf(request);
      if (session === null) return reply.redirect("/console/sign-in", 303);
      const pair = await tradingAdmin.showPair(request.params.pair_id);
      if (pair === null) return html(reply, notFoundPage(session), 404);
      const mayChange = roleAllows(session.operator.role, "admin");
      const tick = deps.priceFeed === null ? null : await deps.priceFeed.lastTick(pair.id);
      return html(
        reply,
        pairPage(session, pair, tick, deps.priceFeed !== null, await history("pair", pair.id), mayChange),
      );
    },
  );
}
