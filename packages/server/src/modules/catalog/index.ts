export { catalogRoutes } from "./catalog-routes.ts";
export { englishCountryName, seedCatalog } from "./catalog-seed.ts";
export { CatalogService } from "./catalog-service.ts";
