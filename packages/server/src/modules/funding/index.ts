export { fundingRoutes } from "./funding-routes.ts";
export { FundingService, isDuplicateRef } from "./funding-service.ts";
