// Writes docs/openapi.json: the partner API's OpenAPI document exactly as GET /openapi.json serves
// it, generated from the route schemas (packages/server/src/http/openapi.ts); and from it the SDK's
// wire types, packages/sdk/src/wire.ts (scripts/wire-types.ts). The tests
// packages/server/src/http/openapi.test.ts and packages/sdk/src/wire.test.ts fail when a committed
// file differs from what the routes generate: after changing a route, run `npm run openapi` and
// commit the result.
// Usage: node scripts/openapi.ts [--stdout]   (--stdout prints the document and writes nothing)

import fs from "node:fs";
import path from "node:path";
import { buildPartnerApp } from "../packages/server/src/app.ts";
import { loadConfig } from "../packages/server/src/config/config.ts";
import { openDatabase } from "../packages/server/src/db/database.ts";
import { openApiPath, openApiText } from "../packages/server/src/http/openapi.ts";
import { systemClock } from "../packages/server/src/platform/clock.ts";
import { systemRandom } from "../packages/server/src/platform/random.ts";
import { buildServices } from "../packages/server/src/services.ts";
import { wireTypesFile, wireTypesText } from "./wire-types.ts";

const root = path.resolve(import.meta.dirname, "..");
const file = path.join(root, "docs", "openapi.json");

// The partner app over an empty in-memory database: the document needs no data, and no request
// but GET /openapi.json reaches the app.
const database = await openDatabase({ databaseUrl: null, pgliteDir: null });
const config = loadConfig({ PRICE_FEED: "manual", ADMIN_PORT: "off" });
const services = buildServices({ config, database, clock: systemClock, random: systemRandom });
const app = buildPartnerApp(services, { logger: false });
let text: string;
try {
  await app.ready();
  const res = await app.inject({ method: "GET", url: openApiPath });
  if (res.statusCode !== 200) throw new Error(`GET ${openApiPath}: ${res.statusCode} ${res.body}`);
  text = openApiText(res.json());
} finally {
  await app.close();
  await database.close();
}

if (process.argv.includes("--stdout")) {
  process.stdout.write(text);
} else {
  fs.writeFileSync(file, text);
  process.stdout.write(`wrote ${path.relative(process.cwd(), file)}\n`);
  const wire = path.join(root, wireTypesFile);
  fs.writeFileSync(wire, await wireTypesText(JSON.parse(text)));
  process.stdout.write(`wrote ${path.relative(process.cwd(), wire)}\n`);
}
