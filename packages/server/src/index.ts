// The server package's public surface, for the CLI, the benchmarks and end-to-end tests.

export { buildAdminApp, buildPartnerApp } from "./app.ts";
export { type Config, ConfigError, isCidrOrIp, loadConfig } from "./config/config.ts";
export { limits } from "./config/limits.ts";
export { type DatabaseHandle, FolderLockedError, openDatabase } from "./db/database.ts";
export { migrate } from "./db/migrate.ts";
export { closeOnSignals, openStore, type RunningServer, runServer } from "./main.ts";

// The admin API's wire shapes, for the operator's CLI (packages/cli/src/operator/admin-client.ts):
// the types of the TypeBox schemas its routes validate and serialise with.
export type { AuditEntry } from "./modules/audit/index.ts";
export type { AssetChangesBody, AssetView as AdminAsset } from "./modules/catalog/index.ts";
export type { LedgerDifference, LedgerReport } from "./modules/ledger/index.ts";
export type {
  OperatorActiveBody,
  OperatorCreateBody,
  OperatorPasswordBody,
  OperatorRoleBody,
  OperatorView,
} from "./modules/operators/index.ts";
export type {
  PartnerActiveBody,
  PartnerCreateBody,
  PartnerIpsBody,
  PartnerKeyAddBody,
  PartnerKeyBody,
  PartnerKeyView as AdminPartnerKey,
  PartnerLimitsBody,
  PartnerView as AdminPartner,
} from "./modules/partners/index.ts";
export type {
  AdminPairView as AdminPair,
  AdminPartnerFeesView as AdminPartnerFees,
  AdminPartnerPairView as AdminPartnerPair,
  PairChangesBody,
  PairPriceBody,
  PartnerFeesChangesBody,
  PartnerPairChangesBody,
} from "./modules/trading/index.ts";
export type {
  AdminWebhookEndpointView as AdminWebhookEndpoint,
  WebhookEnabledBody,
} from "./modules/webhooks/index.ts";
