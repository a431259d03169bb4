// A bare Fastify app for comparison: no authentication, no database, no hooks, no logging. One
// GET route answers the JSON document in the file given as argv[3], serialised on every request
// (as a handler returning an object would be), at the path given as argv[2].
// Usage: node bench/bare-server.ts <path> <json-file>; prints {"port":N} on stdout once listening.

import fs from "node:fs";
import Fastify from "fastify";

const [routePath, bodyFile] = process.argv.slice(2);
if (routePath === undefined || !routePath.startsWith("/") || bodyFile === undefined) {
  process.stderr.write("usage: node bench/bare-server.ts <path> <json-file>\n");
  process.exit(2);
}
const document: unknown = JSON.parse(fs.readFileSync(bodyFile, "utf8"));

const app = Fastify({ logger: false });
app.get(routePath, async () => document);
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
