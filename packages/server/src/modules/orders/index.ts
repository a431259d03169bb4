export { type OrderRow, OrderSchema, type OrderView, orderView } from "./order-views.ts";
export { ordersRoutes } from "./orders-routes.ts";
export { OrdersService, type RollOptions, type RollResult } from "./orders-service.ts";
export { findOrder, insertOrder, orderColumnList, refTaken } from "./orders-store.ts";
