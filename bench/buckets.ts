// The buckets a sample of an API process's CPU falls in, by the file of the function it was in (or,
// for a native function or one of Node's own, of its nearest caller in a file of ours or of a
// library's). Shared by `npm run bench:profile` (V8's profiler) and `npm run bench:perf` (Linux perf).

export const httpBucket = "HTTP serving (Fastify, Node's http, sockets)";
/** PostgreSQL compiled to WebAssembly, run by PGlite inside the sandbox's process. */
export const wasmBucket = "PostgreSQL in WebAssembly (PGlite)";

export const buckets: { name: string; test: (url: string, fn: string) => boolean }[] = [
  {
    name: "logging (pino)",
    test: (u) => /node_modules\/(pino|sonic-boom|thread-stream)|platform\/logger/.test(u),
  },
  {
    name: "authentication (signature, key, replay guard, allow-list)",
    test: (u) => /http\/signature-auth|modules\/partners\/|protocol\/(src|dist)\/signing|ipaddr/.test(u),
  },
  {
    name: "validation (Ajv, our checks)",
    test: (u, f) =>
      /node_modules\/(ajv|fast-uri|ajv-formats)|http\/(validation|input-checks|amount|query-schemas)|-validation\.ts/.test(
        u,
      ) || /^validate\d*$/.test(f),
  },
  {
    name: "serialisation (fast-json-stringify, JSON)",
    test: (u, f) =>
      /node_modules\/fast-json-stringify|-views\.ts/.test(u) || f === "anonymous" || f === "main",
  },
  {
    // The sandbox's database in this process: PGlite's JavaScript (the protocol's messages, the
    // rows, the calls into its WebAssembly module and its file system), and Kysely's dialect for
    // it. PostgreSQL's own code, in WebAssembly, is told apart by bench:perf (wasmBucket).
    name: "PGlite's JavaScript",
    test: (u) => /node_modules\/(@electric-sql\/pglite|kysely-pglite-dialect)\//.test(u),
  },
  {
    name: "SQL client (pg, Kysely, db/)",
    test: (u) => /node_modules\/(pg|pg-protocol|pg-pool|pg-types|postgres-|kysely)|server\/src\/db\//.test(u),
  },
  { name: "body parsing", test: (u) => /http\/(body-parsing|multipart)|secure-json-parse|busboy/.test(u) },
  {
    name: httpBucket,
    test: (u) =>
      /node_modules\/(fastify|@fastify|find-my-way|avvio|light-my-request|fast-querystring)/.test(u),
  },
  { name: "metrics", test: (u) => /http\/metrics|prom-client/.test(u) },
  { name: "use case (modules)", test: (u) => /server\/src\/modules\//.test(u) },
  { name: "our HTTP layer (other)", test: (u) => /server\/src\/http\/|server\/src\/app\.ts/.test(u) },
  { name: "money and protocol", test: (u) => /protocol\/(src|dist)\//.test(u) },
  { name: "the reference's own code", test: (u) => /bench\/reference-server\.ts/.test(u) },
];

/** The bucket of a function in the file `url` (a path or a file: URL). */
export function bucketOfFile(url: string, functionName: string): string {
  return (
    buckets.find((b) => b.test(url, functionName))?.name ??
    (/node_modules\//.test(url) ? "other libraries" : "other")
  );
}
