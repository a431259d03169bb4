export {
  type Actor,
  OperatorActiveBody,
  OperatorCreateBody,
  OperatorPasswordBody,
  OperatorRoleBody,
  type OperatorView,
  operatorRoles,
  roleAllows,
} from "./operator-views.ts";
export { type OperatorRoutesDeps, operatorsRoutes } from "./operators-routes.ts";
export { type LiveSession, OperatorsService } from "./operators-service.ts";
