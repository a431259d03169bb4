export { type Priced, priceQuote, requiredFunds, type Side } from "./quote.ts";
export { tradingRoutes } from "./trading-routes.ts";
export { TradingService, tokenPattern } from "./trading-service.ts";
export { QuoteSchema, type QuoteView } from "./trading-views.ts";
