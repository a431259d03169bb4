export { seedCatalog, englishCountryName } from "./catalog-seed.ts";
export { catalogRoutes } from "./catalog-routes.ts";
export { CatalogService } from "./catalog-service.ts";
