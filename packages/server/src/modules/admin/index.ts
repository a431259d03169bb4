export { type AdminClientsDeps, adminClientsRoutes } from "./admin-clients-routes.ts";
export { type AdminMoneyDeps, adminMoneyRoutes } from "./admin-money-routes.ts";
export { type AdminPartnersDeps, adminRoutes } from "./admin-routes.ts";
export { type AdminTradingDeps, adminTradingRoutes } from "./admin-trading-routes.ts";
