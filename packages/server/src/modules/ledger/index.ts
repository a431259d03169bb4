export { BalanceSchema, type BalanceView } from "./balance-views.ts";
export { balancesRoutes } from "./balances-routes.ts";
export { BalancesService } from "./balances-service.ts";
export { LedgerAdminService } from "./ledger-admin.ts";
export { checkLedger, clientBalances, legArguments } from "./ledger-store.ts";
export {
  type LedgerDifference,
  LedgerDifferenceSchema,
  type LedgerReport,
  LedgerReportSchema,
} from "./ledger-views.ts";
export { houseSlot, houseSlots, type Leg, orderLegs } from "./legs.ts";
export {
  type CallSizes,
  type LockGroup,
  OrderQueue,
  type OrderQueueOptions,
  type OrderSender,
  type OrdersPerCall,
  ordersPerCallHistogram,
  RetryAlone,
} from "./order-queue.ts";
