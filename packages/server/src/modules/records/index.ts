export { recordsRoutes } from "./records-routes.ts";
export { type Cursor, type KeysetPage, type OrderSearch, RecordsService } from "./records-service.ts";
export type {
  AssetTotalRecord,
  ClientBalanceRecord,
  HouseAccountRecord,
  OrderRecord,
  PostingRecord,
} from "./records-views.ts";
