// The server package's public surface, for the CLI, the benchmarks and end-to-end tests.

export { buildAdminApp, buildPartnerApp } from "./app.ts";
export { ConfigError, isCidrOrIp, loadConfig, type Config } from "./config/config.ts";
export { limits } from "./config/limits.ts";
export { openDatabase, FolderLockedError, type DatabaseHandle } from "./db/database.ts";
export { migrate } from "./db/migrate.ts";
export { closeOnSignals, openStore, runServer, type RunningServer } from "./main.ts";
