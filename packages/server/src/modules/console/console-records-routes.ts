// The console's record pages (docs/decisions.md, "Back office records"): orders filtered and paged
// by keyset, an order with its postings, the ledger (its check on demand), a client's records, a
// document's file for operators (on the audit trail), and the audit trail with its filters. Reads
// go through the records and audit services; nothing here speaks SQL.

import { orderSources, orderStatuses, orderTypes } from "@counterpart/protocol";
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { Type } from "typebox";
import { limits } from "../../config/limits.ts";
import type { OrderSource, OrderStatus, OrderType } from "../../db/schema.ts";
import { auditNote } from "../../http/admin-access.ts";
import { queryDatetime } from "../../http/query-schemas.ts";
import { isUuid } from "../../platform/uuid.ts";
import type { AuditService } from "../audit/index.ts";
import type { Cursor, RecordsService } from "../records/index.ts";
import { auditTable, notFoundPage } from "./console-pages.ts";
import {
  auditFilterPage,
  clientRecords,
  ledgerPage,
  orderPage,
  ordersPage,
} from "./console-records-pages.ts";
import { consolePageErrors, html, sessionOf } from "./console-routes.ts";

const pageSize = limits.pageSizeMax / 2;
/** The client page shows this many of the client's latest orders; the orders page has the rest. */
const clientOrdersShown = 20;

/** A time the page was given, as timestamptz text: null when empty, "bad" when it is not one. */
function timeParam(v: string | undefined): string | null | "bad" {
  const t = (v ?? "").trim();
  if (t === "") return null;
  return queryDatetime(t) ?? "bad";
}

function cursorParam(at: string | undefined, id: number | undefined): Cursor | null | "bad" {
  if (at === undefined && id === undefined) return null;
  const t = timeParam(at);
  if (t === null || t === "bad" || id === undefined) return "bad";
  return { at: t, id };
}

const cursorQuery = {
  after_at: Type.Optional(Type.String({ maxLength: 40 })),
  after_id: Type.Optional(Type.Integer({ minimum: 1 })),
};

const oneOf = <T extends string>(values: readonly T[], v: string | undefined): T | null =>
  (values as readonly string[]).includes(v ?? "") ? (v as T) : null;

export interface ConsoleRecordsDeps {
  readonly records: RecordsService;
  readonly audit: AuditService;
}

/** The client page's records (balances, latest orders, documents), for the client route. */
export async function clientRecordsHtml(
  records: RecordsService,
  partnerId: string,
  partnerClientId: string,
): Promise<string> {
  const clientId = await records.clientId(partnerId, partnerClientId);
  if (clientId === null) return "";
  const filter = {
    partnerId,
    clientId,
    type: null,
    source: null,
    status: null,
    from: null,
    to: null,
  };
  const [balances, orders, documents] = await Promise.all([
    records.clientBalances(clientId),
    records.orders(filter, null, clientOrdersShown),
    records.clientDocuments(clientId),
  ]);
  return clientRecords(partnerId, partnerClientId, balances, orders.items, orders.next !== null, documents);
}

function badRequest(reply: FastifyReply, body: string) {
  return html(reply, body, 400);
}

const timeMessage = (label: string) => `${label} should be a date or a time such as 2026-11-01T00:00:00Z.`;

/** The words of a broken page link, for whichever of its two values the page could not read. */
const linkMessages = (what: string) => {
  const msg = `This page link is not valid; start again from the newest ${what}.`;
  return { after_at: msg, after_id: msg };
};

const ordersMessages = {
  from: timeMessage("Created from/to"),
  to: timeMessage("Created from/to"),
  ...linkMessages("orders"),
};
const auditMessages = {
  from: timeMessage("From/to"),
  to: timeMessage("From/to"),
  ...linkMessages("entries"),
};
const noOrdersQuery = { partner: "", client: "", type: "", source: "", status: "", from: "", to: "" };
const noAuditQuery = { actor: "", action: "", target_type: "", target: "", from: "", to: "" };

export function consoleRecordsRoutes(app: FastifyInstance, { records, audit }: ConsoleRecordsDeps): void {
  app.get<{
    Querystring: {
      partner?: string;
      client?: string;
      type?: string;
      source?: string;
      status?: string;
      from?: string;
      to?: string;
      after_at?: string;
      after_id?: number;
    };
  }>(
    "/console/orders",
    {
      errorHandler: consolePageErrors(
        (session, message) => ordersPage(session, noOrdersQuery, [], null, true, message),
        ordersMessages,
      ),
      schema: {
        querystring: Type.Object({
          partner: Type.Optional(Type.String({ maxLength: 64 })),
          client: Type.Optional(Type.String({ maxLength: 255 })),
          type: Type.Optional(Type.String({ maxLength: 32 })),
          source: Type.Optional(Type.String({ maxLength: 32 })),
          status: Type.Optional(Type.String({ maxLength: 32 })),
          from: Type.Optional(Type.String({ maxLength: 40 })),
          to: Type.Optional(Type.String({ maxLength: 40 })),
          ...cursorQuery,
        }),
      },
    },
    async (request, reply) => {
      const session = sessionOf(request);
      if (session === null) return reply.redirect("/console/sign-in", 303);
      const q = request.query;
      const type = oneOf<OrderType>(orderTypes, q.type);
      const source = oneOf<OrderSource>(orderSources, q.source);
      const status = oneOf<OrderStatus>(orderStatuses, q.status);
      const query = {
        partner: (q.partner ?? "").trim(),
        client: (q.client ?? "").trim(),
        type: type ?? "",
        source: source ?? "",
        status: status ?? "",
        from: (q.from ?? "").trim(),
        to: (q.to ?? "").trim(),
      };
      const from = timeParam(q.from);
      const to = timeParam(q.to);
      const after = cursorParam(q.after_at, q.after_id);
      const fail = (msg: string) => badRequest(reply, ordersPage(session, query, [], null, true, msg));
      if (from === "bad" || to === "bad") return fail(ordersMessages.from);
      if (after === "bad") return fail(ordersMessages.after_at);
      if (query.partner !== "" && !isUuid(query.partner.toLowerCase()))
        return fail("The partner id is a UUID such as 0b9c3f4e-5d6a-4b7c-8d9e-0f1a2b3c4d5e.");
      if (query.client !== "" && query.partner === "") return fail("A client id needs its partner id.");
      let clientId: number | null = null;
      if (query.client !== "") {
        clientId = await records.clientId(query.partner.toLowerCase(), query.client);
        if (clientId === null) return html(reply, ordersPage(session, query, [], null, after === null, null));
      }
      const found = await records.orders(
        {
          partnerId: query.partner === "" ? null : query.partner.toLowerCase(),
          clientId,
          type,
          source,
          status,
          from,
          to,
        },
        after,
        pageSize,
      );
      return html(reply, ordersPage(session, query, found.items, found.next, after === null, null));
    },
  );

  app.get<{ Params: { order_id: number } }>(
    "/console/orders/:order_id",
    { schema: { params: Type.Object({ order_id: Type.Integer({ minimum: 1 }) }) } },
    async (request, reply) => {
      const session = sessionOf(request);
      if (session === null) return reply.redirect("/console/sign-in", 303);
      const found = await records.order(request.params.order_id);
      if (found === null) return html(reply, notFoundPage(session), 404);
      return html(reply, orderPage(session, found.order, found.postings));
    },
  );

  app.get<{ Querystring: { check?: string } }>(
    "/console/ledger",
    { schema: { querystring: Type.Object({ check: Type.Optional(Type.String({ maxLength: 8 })) }) } },
    async (request, reply) => {
      const session = sessionOf(request);
      if (session === null) return reply.redirect("/console/sign-in", 303);
      const [ledger, check] = await Promise.all([
        records.ledger(),
        request.query.check === "1" ? records.checkLedger() : Promise.resolve(null),
      ]);
      return html(reply, ledgerPage(session, ledger.house, ledger.totals, check));
    },
  );

  // A document's file, for any signed-in operator (viewer, compliance, admin): shown in the
  // client's page, never run. Every reading is on the audit trail.
  app.get<{ Params: { document_id: number; side: "front" | "back" } }>(
    "/console/documents/:document_id/:side",
    {
      schema: {
        params: Type.Object({
          document_id: Type.Integer({ minimum: 1 }),
          side: Type.Union([Type.Literal("front"), Type.Literal("back")]),
        }),
      },
    },
    async (request: FastifyRequest<{ Params: { document_id: number; side: "front" | "back" } }>, reply) => {
      const session = sessionOf(request);
      if (session === null) return reply.redirect("/console/sign-in", 303);
      const file = await records.readDocument(
        request.params.document_id,
        request.params.side,
        auditNote(request),
      );
      if (file === null) return html(reply, notFoundPage(session), 404);
      return reply
        .header(
          "Content-Security-Policy",
          "sandbox; default-src 'none'; img-src 'self'; style-src 'unsafe-inline'",
        )
        .header("X-Content-Type-Options", "nosniff")
        .header("Cache-Control", "no-store")
        .header("Content-Disposition", "inline")
        .header("X-Frame-Options", "SAMEORIGIN")
        .header("Referrer-Policy", "same-origin")
        .type(file.contentType)
        .send(file.bytes);
    },
  );

  app.get<{
    Querystring: {
      actor?: string;
      action?: string;
      target_type?: string;
      target?: string;
      from?: string;
      to?: string;
      after_at?: string;
      after_id?: number;
    };
  }>(
    "/console/audit",
    {
      errorHandler: consolePageErrors(
        (session, message) => auditFilterPage(session, noAuditQuery, auditTable([]), null, true, message),
        auditMessages,
      ),
      schema: {
        querystring: Type.Object({
          actor: Type.Optional(Type.String({ maxLength: 254 })),
          action: Type.Optional(Type.String({ maxLength: 64 })),
          target_type: Type.Optional(Type.String({ maxLength: 64 })),
          target: Type.Optional(Type.String({ maxLength: 300 })),
          from: Type.Optional(Type.String({ maxLength: 40 })),
          to: Type.Optional(Type.String({ maxLength: 40 })),
          ...cursorQuery,
        }),
      },
    },
    async (request, reply) => {
      const session = sessionOf(request);
      if (session === null) return reply.redirect("/console/sign-in", 303);
      const q = request.query;
      const query = {
        actor: (q.actor ?? "").trim(),
        action: (q.action ?? "").trim(),
        target_type: (q.target_type ?? "").trim(),
        target: (q.target ?? "").trim(),
        from: (q.from ?? "").trim(),
        to: (q.to ?? "").trim(),
      };
      const from = timeParam(q.from);
      const to = timeParam(q.to);
      const after = cursorParam(q.after_at, q.after_id);
      const fail = (msg: string) =>
        badRequest(reply, auditFilterPage(session, query, auditTable([]), null, true, msg));
      if (from === "bad" || to === "bad") return fail(auditMessages.from);
      if (after === "bad") return fail(auditMessages.after_at);
      const uuidLike = isUuid(query.actor.toLowerCase());
      if (
        query.actor !== "" &&
        !["token", "system"].includes(query.actor) &&
        !query.actor.includes("@") &&
        !uuidLike
      )
        return fail("Actor should be an operator's e-mail address or id, token, or system.");
      const nullIfEmpty = (s: string) => (s === "" ? null : s);
      const found = await audit.page(
        {
          actor: uuidLike ? query.actor.toLowerCase() : nullIfEmpty(query.actor),
          action: nullIfEmpty(query.action),
          targetType: nullIfEmpty(query.target_type),
          targetId: nullIfEmpty(query.target),
          from,
          to,
        },
        after,
        pageSize,
      );
      return html(
        reply,
        auditFilterPage(session, query, auditTable(found.items), found.next, after === null, null),
      );
    },
  );
}
