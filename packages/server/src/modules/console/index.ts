export { type ConsoleAdminDeps, consoleAdminRoutes } from "./console-admin-routes.ts";
export { type ConsoleDeps, consoleRoutes } from "./console-routes.ts";
