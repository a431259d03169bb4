export {
  type EventPosition,
  EventSchema,
  type EventType,
  type EventView,
  eventId,
  eventPosition,
  eventTypes,
} from "./event-views.ts";
export { eventsRoutes } from "./events-routes.ts";
export { EventsService } from "./events-service.ts";
export { type ClientEventRecord, recordClientEvent } from "./events-store.ts";
