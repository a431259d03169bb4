// GET /v1/partner/events (docs/reference.md, "Events"): the partner's event feed; and one event by
// its id.

import type { FastifyInstance } from "fastify";
import { type Static, Type } from "typebox";
import { limits } from "../../config/limits.ts";
import { HttpError, validationError } from "../../http/http-error.ts";
import { errorResponses } from "../../http/openapi.ts";
import { literalUnion } from "../../platform/wire-schemas.ts";
import { requestOrigin } from "../documents/index.ts";
import { EventFeedSchema, EventSchema, eventTypes } from "./event-views.ts";
import type { EventsService } from "./events-service.ts";

const FeedQuery = Type.Object({
  after: Type.Optional(Type.String({ maxLength: 64, description: "An event id: the events after it." })),
  limit: Type.Optional(
    Type.Integer({ minimum: 1, maximum: limits.pageSizeMax, default: limits.pageSizeDefault }),
  ),
  type: Type.Optional(Type.Array(literalUnion(eventTypes), { maxItems: 20 })),
  partner_client_id: Type.Optional(Type.String({ minLength: 1, maxLength: 255 })),
});

export function eventsRoutes(app: FastifyInstance, events: EventsService): void {
  app.get<{ Querystring: Static<typeof FeedQuery> }>(
    "/v1/partner/events",
    {
      schema: {
        tags: ["events"],
        operationId: "listEvents",
        summary: "Read the partner's event feed",
        description:
          "Oldest first, in one order that never changes once read. Pass the last event's id (or " +
          "`next_cursor`) as `after` to read on. `type` is repeatable. An event appears once every " +
          "transaction that began before it has ended.",
        querystring: FeedQuery,
        response: { 200: EventFeedSchema, ...errorResponses(["invalid_client"]) },
      },
    },
    async (request) => {
      const q = request.query;
      const result = await events.list(
        request.partnerId!,
        {
          after: q.after ?? null,
          types: q.type ?? [],
          partnerClientId: q.partner_client_id ?? null,
          limit: q.limit ?? limits.pageSizeDefault,
        },
        requestOrigin(request),
      );
      if (!result.ok) {
        if (result.error === "invalid_cursor")
          throw validationError([
            { loc: ["query", "after"], msg: "Not an event id of this feed", type: "value_error" },
          ]);
        throw new HttpError(result.error);
      }
      const { ok: _ok, ...body } = result;
      return body;
    },
  );

  app.get<{ Params: { event_id: string } }>(
    "/v1/partner/events/:event_id",
    {
      schema: {
        tags: ["events"],
        operationId: "getEvent",
        summary: "Get one event by its id",
        description:
          "The event as the feed and the webhooks show it (a document's links signed afresh). 404 " +
          "when the id names no event, or another partner's, or one past the retention period.",
        params: Type.Object({ event_id: Type.String({ maxLength: 64 }) }),
        response: { 200: Type.Object({ result: EventSchema }), ...errorResponses(["not_found"]) },
      },
    },
    async (request) => {
      const event = await events.get(request.partnerId!, request.params.event_id, requestOrigin(request));
      if (event === null) throw new HttpError("not_found");
      return { result: event };
    },
  );
}
