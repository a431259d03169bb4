export { eventExamples, webhookTestExample } from "./event-examples.ts";
export {
  type EventPosition,
  EventSchema,
  type EventType,
  type EventView,
  eventId,
  eventPosition,
  eventTypes,
} from "./event-views.ts";
export { eventWebhooksOpenApi } from "./event-webhooks-openapi.ts";
export { eventsRoutes } from "./events-routes.ts";
export { EventsService } from "./events-service.ts";
export { type ClientEventRecord, recordClientEvent } from "./events-store.ts";
