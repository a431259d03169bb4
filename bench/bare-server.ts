// A bare Fastify app for comparison: no authentication, no database, no hooks, no logging. Each
// route answers the JSON document in its file, serialised on every request (as a handler returning
// an object would be). A route is a path (a GET) or "POST <path>": a POST's JSON body is parsed by
// Fastify, as the service's is, and not looked at.
// Usage: node bench/bare-server.ts <route> <json-file> [<route> <json-file> ...]; prints
// {"port":N} on stdout once listening.

import fs from "node:fs";
import Fastify from "fastify";

function usage(): never {
  process.stderr.write("usage: node bench/bare-server.ts <route> <json-file> [<route> <json-file> ...]\n");
  process.exit(2);
}

const args = process.argv.slice(2);
const routes: { method: "GET" | "POST"; url: string; document: unknown }[] = [];
for (let i = 0; i < args.length; i += 2) {
  const [route, bodyFile] = [args[i] ?? "", args[i + 1]];
  const [method, url] = route.startsWith("POST ")
    ? (["POST", route.slice(5)] as const)
    : (["GET", route] as const);
  if (!url.startsWith("/") || bodyFile === undefined) usage();
  routes.push({ method, url, document: JSON.parse(fs.readFileSync(bodyFile, "utf8")) });
}
if (routes.length === 0) usage();

const app = Fastify({ logger: false });
for (const { method, url, document } of routes) app.route({ method, url, handler: async () => document });
await app.listen({ host: "127.0.0.1", port: 0 });
const address = app.server.address();
if (address === null || typeof address === "string") throw new Error("no TCP address");
process.stdout.write(`${JSON.stringify({ port: address.port })}\n`);

let closing = false;
for (const signal of ["SIGTERM", "SIGINT"] as const) {
  process.on(signal, () => {
    if (closing) return;
    closing = true;
    app.close().then(
      () => process.exit(0),
      () => process.exit(1),
    );
  });
}
