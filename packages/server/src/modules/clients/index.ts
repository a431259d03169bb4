export {
  type ClientCheck,
  type ClientLookup,
  type ClientRef,
  checkClientCanTransact,
  judgeClient,
  lookUpClient,
} from "./client-check.ts";
export { ClientSchema, type ClientView, clientView } from "./client-views.ts";
export { clientsRoutes } from "./clients-routes.ts";
export { type ClientResult, ClientsService } from "./clients-service.ts";
export { clientStatuses } from "./clients-validation.ts";
