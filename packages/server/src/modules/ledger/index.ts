export { BalanceSchema, balancesRoutes } from "./balances-routes.ts";
export { BalancesService, type BalanceView } from "./balances-service.ts";
export {
  checkLedger,
  clientBalances,
  houseSlot,
  type LedgerDifference,
  type Leg,
  legArguments,
  orderLegs,
} from "./ledger-store.ts";
