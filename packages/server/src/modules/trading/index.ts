export { KeptQuoteFacts } from "./kept-quote-facts.ts";
export { KeptQuotes } from "./kept-quotes.ts";
export { type Priced, priceQuote, requiredFunds, type Side } from "./quote.ts";
export { tradeLegs } from "./trade-legs.ts";
export {
  type AdminResult,
  type PairRow,
  priceAheadToleranceMs,
  TradingAdminService,
} from "./trading-admin.ts";
export {
  AdminPairSchema,
  type AdminPairView,
  AdminPartnerFeesSchema,
  type AdminPartnerFeesView,
  AdminPartnerPairSchema,
  type AdminPartnerPairView,
  PairChangesBody,
  PairPriceBody,
  PartnerFeesChangesBody,
  PartnerPairChangesBody,
} from "./trading-admin-views.ts";
export { tradingRoutes } from "./trading-routes.ts";
export { TradingService, tokenPattern, tradingCallSizes } from "./trading-service.ts";
export { QuoteSchema, type QuoteView } from "./trading-views.ts";
