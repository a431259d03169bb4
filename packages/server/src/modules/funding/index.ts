export { fundingLegs } from "./funding-legs.ts";
export { fundingRoutes } from "./funding-routes.ts";
export { FundingService } from "./funding-service.ts";
export { KeptFundingFacts } from "./kept-facts.ts";
