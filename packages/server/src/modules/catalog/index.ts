export { type AssetChanges, CatalogAdminService } from "./catalog-admin.ts";
export { catalogRoutes } from "./catalog-routes.ts";
export { englishCountryName, seedCatalog } from "./catalog-seed.ts";
export { CatalogService } from "./catalog-service.ts";
export { findAsset } from "./catalog-store.ts";
export { AssetChangesBody, AssetSchema, type AssetView } from "./catalog-views.ts";
export {
  type FeedTick,
  type PairRow,
  type PriceFeed,
  type ResumeHook,
  SimulatedPriceFeed,
} from "./price-feed.ts";
