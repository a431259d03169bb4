export { type OrderRow, OrderSchema, type OrderView, orderView } from "./order-views.ts";
export { ordersRoutes } from "./orders-routes.ts";
export { OrdersService } from "./orders-service.ts";
export { findOrder, insertOrder, orderColumnList, refTaken } from "./orders-store.ts";
