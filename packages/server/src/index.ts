// The server package's public surface, for the CLI, the benchmarks and end-to-end tests.

export { buildAdminApp, buildPartnerApp } from "./app.ts";
export { type Config, ConfigError, isCidrOrIp, loadConfig } from "./config/config.ts";
export { limits } from "./config/limits.ts";
export { type DatabaseHandle, FolderLockedError, openDatabase } from "./db/database.ts";
export { migrate } from "./db/migrate.ts";
export { closeOnSignals, openStore, type RunningServer, runServer } from "./main.ts";
