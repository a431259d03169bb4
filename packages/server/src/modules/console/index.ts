export { type ConsoleDeps, consoleRoutes } from "./console-routes.ts";
