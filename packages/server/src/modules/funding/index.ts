export { fundingRoutes } from "./funding-routes.ts";
export { decimalPlacesError, FundingService, finerThanAsset, isDuplicateRef } from "./funding-service.ts";
