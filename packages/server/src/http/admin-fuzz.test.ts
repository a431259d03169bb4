// Fuzzing every route of the admin listener over real HTTP, as the partner document is fuzzed
// (openapi-fuzz.test.ts) and with the same generators (testing/openapi-fuzz.ts). The admin API has
// no published document, so one is made here from the app itself: every route the access table
// names (http/admin-access.ts, which refuses to start with a route left out), with the parameter,
// query and body schemas Fastify compiles for it and its success schemas. Requests carry the admin
// token, so they get past authentication into validation and the use cases. An answer must be a
// success the route declares, or a 4xx of the error shape (HTML pages of the console excepted),
// with no library text; nothing may be a 5xx; the listener must still answer after each route.
//
// FUZZ_SEED replays another run; ADMIN_FUZZ_RUNS changes the number of requests per route (300 by
// default); ADMIN_FUZZ_ROUTES ("PUT /admin/pairs/:pair_id/price", comma separated) fuzzes only those.

import assert from "node:assert/strict";
import type { AddressInfo } from "node:net";
import { after, before, describe, test } from "node:test";
import { generateKeyPair } from "@counterpart/protocol";
import fc from "fast-check";
import type { FastifyInstance, FastifySchemaCompiler } from "fastify";
import { buildAdminApp } from "../app.ts";
import { limits } from "../config/limits.ts";
import { clientPayload } from "../testing/fixtures.ts";
import { startTestContext, type TestContext, type TestPartner } from "../testing/harness.ts";
import {
  type DocumentedOperation,
  datetimeTexts,
  decimalTexts,
  documentedOperations,
  type JsonSchema,
  materialise,
  type OpenApiDocument,
  type Operation,
  type Parameter,
  RawHttpClient,
  ResponseChecker,
  requestArbitrary,
} from "../testing/openapi-fuzz.ts";
import { adminRouteRoles, publicAdminRoutes } from "./admin-access.ts";
import { LazySchemas } from "./lazy-schemas.ts";

const seed = process.env.FUZZ_SEED ? Number(process.env.FUZZ_SEED) : 20_261_130;
const runs = process.env.ADMIN_FUZZ_RUNS ? Number(process.env.ADMIN_FUZZ_RUNS) : 300;
const only = process.env.ADMIN_FUZZ_ROUTES ? new Set(process.env.ADMIN_FUZZ_ROUTES.split(",")) : null;
const concurrency = 4;
const requestTimeoutMs = 15_000;
const routeBudgetMs = 120_000;

/** Routes left out: probes with nothing to send, and the console's static files. */
const notFuzzed = new Set(["GET /healthz", "GET /metrics", "GET /console/assets/:file"]);

/** What the checker says of an HTML error page (content type quoted after it), which the console may send. */
const consoleErrorPage = new Set(["error with content type", "an error body that is not JSON"]);

/** The statuses any admin route may answer besides its successes (docs/errors.md). */
const errorStatuses = ["400", "404", "405", "409", "413", "415", "422", "429"];

// --- The admin API as a document --------------------------------------------------------------

interface RecordedRoute {
  parts: Map<string, unknown>;
  responses: Map<string, unknown>;
}

/** LazySchemas that also keeps each route's schemas, by "METHOD /url", as Fastify hands them over. */
class RecordingSchemas extends LazySchemas {
  readonly routes = new Map<string, RecordedRoute>();

  #route(method: string, url: string): RecordedRoute {
    const key = `${method} ${url}`;
    let r = this.routes.get(key);
    if (r === undefined) {
      r = { parts: new Map(), responses: new Map() };
      this.routes.set(key, r);
    }
    return r;
  }

  override validatorCompiler(compile: FastifySchemaCompiler<unknown>): FastifySchemaCompiler<unknown> {
    const inner = super.validatorCompiler(compile);
    return (route) => {
      this.#route(route.method, route.url).parts.set(route.httpPart ?? "", route.schema);
      return inner(route);
    };
  }

  override serializerFactory(): ReturnType<LazySchemas["serializerFactory"]> {
    const inner = super.serializerFactory();
    return (externalSchemas, options) => {
      const build = inner(externalSchemas, options);
      return (route) => {
        this.#route(route.method, route.url).responses.set(String(route.httpStatus), route.schema);
        return build(route);
      };
    };
  }
}

/** A schema as plain JSON without `$id`s (the same named schema sits under several routes). */
function plain(schema: unknown): JsonSchema {
  return JSON.parse(JSON.stringify(schema), (k, v) => (k === "$id" ? undefined : v)) as JsonSchema;
}

const errorBody: JsonSchema = {
  type: "object",
  required: ["code", "msg", "msg_detail"],
  properties: { code: { type: "integer" }, msg: { type: "string" }, msg_detail: {} },
};

/** The document of the admin API: each route of the access table with what Fastify holds for it. */
function adminDocument(recorded: ReadonlyMap<string, RecordedRoute>): OpenApiDocument {
  const paths: OpenApiDocument["paths"] = {};
  const keys = [...Object.keys(adminRouteRoles), ...publicAdminRoutes].filter((k) => !notFuzzed.has(k));
  for (const key of keys) {
    const [method, url] = key.split(" ") as [string, string];
    const route = recorded.get(key) ?? { parts: new Map(), responses: new Map() };
    const parameters: Parameter[] = [];
    for (const [part, where] of [
      ["params", "path"],
      ["querystring", "query"],
    ] as const) {
      const schema = route.parts.get(part);
      if (schema === undefined) continue;
      const s = plain(schema);
      for (const [name, p] of Object.entries(s.properties ?? {})) {
        parameters.push({
          name,
          in: where,
          required: where === "path" || (s.required ?? []).includes(name),
          schema: p,
        });
      }
    }
    // A path parameter without a schema is still a parameter of the path.
    for (const m of url.matchAll(/:([a-z_]+)/g)) {
      if (!parameters.some((p) => p.in === "path" && p.name === m[1])) {
        parameters.push({ name: m[1]!, in: "path", required: true, schema: { type: "string" } });
      }
    }
    const html = url.startsWith("/console");
    const responses: Operation["responses"] = {};
    for (const [status, schema] of route.responses) {
      responses[status] = {
        description: "success",
        content: { "application/json": { schema: plain(schema) } },
      };
    }
    // The console's root sends the operator on to its first page, with or without its trailing
    // slash; a sign-in link that opens a session, to the console.
    if (url === "/console" || url === "/console/" || url === "/admin/session/link") {
      responses["303"] = { description: "see other" };
    }
    if (route.responses.size === 0) {
      // A route without a response schema: JSON (or the console's HTML) with whatever it holds.
      responses["200"] = {
        description: "success",
        content: html ? { "text/html": {} } : { "application/json": { schema: {} } },
      };
      if (method === "DELETE" || method === "PUT") responses["204"] = { description: "no content" };
    }
    // A sign-in that fails is a 401 (the others never see one: their requests carry the token).
    const statuses = publicAdminRoutes.has(key) ? [...errorStatuses, "401"] : errorStatuses;
    for (const status of statuses) {
      responses[status] = {
        description: "error",
        content: html
          ? { "text/html": {}, "application/json": { schema: errorBody } }
          : { "application/json": { schema: errorBody } },
      };
    }
    const body = route.parts.get("body");
    const operation: Operation = {
      operationId: key,
      parameters,
      ...(body === undefined
        ? {}
        : { requestBody: { required: true, content: { "application/json": { schema: plain(body) } } } }),
      responses,
      security: [],
    };
    const path = url.replace(/:([a-z_]+)/g, "{$1}");
    paths[path] = { ...paths[path], [method.toLowerCase()]: operation };
  }
  return { paths, components: { schemas: {} } };
}

// --- What exists, by parameter and property name --------------------------------------------------

const known = {
  partners: [] as string[],
  clients: [] as string[],
  assets: [] as string[],
  pairs: [] as string[],
  keys: [] as string[],
  operators: [] as string[],
  endpoints: [] as string[],
  orders: [] as string[],
  publicKeys: [] as string[],
};

const ipTexts = fc.constantFrom(
  "127.0.0.1",
  "::1",
  "10.0.0.0/8",
  "192.168.1.0/24",
  "2001:db8::/32",
  "::ffff:127.0.0.1",
  "0.0.0.0/0",
  "1.2.3.4/33",
  "256.1.1.1",
  "10.0.0.1/",
  "fe80::1%eth0",
  "",
);

/** Times around the test clock's day (testing/harness.ts). */
const aroundNow = datetimeTexts(new Date(Date.UTC(2026, 10, 20)), new Date(Date.UTC(2026, 10, 23)));

function hint(name: string | undefined, _schema: JsonSchema): fc.Arbitrary<unknown> | undefined {
  const from = (values: readonly string[]) => (values.length === 0 ? undefined : fc.constantFrom(...values));
  switch (name) {
    case "partner_id":
      return from(known.partners);
    case "partner_client_id":
      return from(known.clients);
    case "asset_id":
      return from(known.assets);
    case "pair_id":
      return from(known.pairs);
    case "key_id":
      return from(known.keys);
    case "operator_id":
    case "actor":
      return from(known.operators);
    case "endpoint_id":
      return from(known.endpoints);
    case "order_id":
    case "after_id":
      return from(known.orders);
    case "from":
    case "to":
    case "after_at":
      return aroundNow;
    case "public_key_pem":
      return from(known.publicKeys);
    case "allowed_ips":
      return fc.array(ipTexts, { maxLength: 4 });
    case "email":
      return fc.emailAddress().filter((e) => e.length <= 254);
    case "buy":
    case "sell":
    case "min_volume":
    case "max_volume":
    case "fee_rate":
    case "vat_percentage":
      return decimalTexts;
  }
  return undefined;
}

describe("fuzzing every route of the admin API over HTTP", { timeout: 60 * 60_000 }, () => {
  let ctx: TestContext;
  let admin: FastifyInstance;
  let http: RawHttpClient;
  let checker: ResponseChecker;
  let operations: DocumentedOperation[] = [];
  let doc: OpenApiDocument;
  let stranger: TestPartner;
  let requestNo = 0;
  const serverErrors = new Map<string, string>();

  /** The console's cookie of an admin operator the fuzz never names (so never disables). */
  let consoleCookie = "";

  async function send(method: string, target: string, body: Buffer, contentType: string | null) {
    const requestId = `admin-fuzz-${++requestNo}`;
    // The console's pages take a session, not the token; the API takes both.
    const headers: Record<string, string> = target.startsWith("/console")
      ? { "x-request-id": requestId, cookie: consoleCookie }
      : { "x-request-id": requestId, authorization: `Bearer ${ctx.adminToken}` };
    if (contentType !== null) headers["content-type"] = contentType;
    const response = await http.send({ method, target, headers, body }, requestTimeoutMs);
    return { requestId, headers, response };
  }

  /** A setup call through the admin API that must succeed; its parsed body. */
  async function call(method: string, target: string, body?: unknown): Promise<Record<string, unknown>> {
    const bytes = body === undefined ? Buffer.alloc(0) : Buffer.from(JSON.stringify(body));
    const { response } = await send(method, target, bytes, body === undefined ? null : "application/json");
    const text = response.body.toString("utf8");
    assert.ok(response.status < 300, `${method} ${target}: ${response.status} ${text}`);
    return text === "" ? {} : (JSON.parse(text) as Record<string, unknown>);
  }

  before(async () => {
    ctx = await startTestContext({
      // A price feed (not ticking: the test drives no background jobs), so that a pair handed back
      // to it is priced by it: the resume route gets past its refusal.
      env: {
        PRICE_FEED: "simulated",
        QUOTE_LIFETIME_S: "3600",
        PRICE_STALE_AFTER_S: "86400",
        WEBHOOK_ALLOW_PRIVATE: "true",
        WEBHOOK_ALLOW_HTTP: "true",
      },
    });
    const schemas = new RecordingSchemas();
    admin = buildAdminApp(ctx.services, {
      logger: false,
      adminToken: ctx.adminToken,
      metricsText: async () => ({ contentType: "text/plain", body: "" }),
      schemas,
    });
    admin.addHook("onError", async (request, _reply, error) => {
      serverErrors.set(
        request.id,
        String(error.stack ?? error.message)
          .split("\n")
          .slice(0, 4)
          .join(" | "),
      );
    });
    await admin.listen({ host: "127.0.0.1", port: 0 });
    // Every schema compiled, so that the recording holds every route's.
    await schemas.warm();
    doc = adminDocument(schemas.routes);
    operations = documentedOperations(doc).filter((op) => only === null || only.has(op.id));
    http = new RawHttpClient("127.0.0.1", (admin.server.address() as AddressInfo).port, concurrency);
    checker = new ResponseChecker(doc);

    stranger = await ctx.addPartner({ name: "Stranger" });
    known.partners = [ctx.partner.id, stranger.id];
    for (const partner of [ctx.partner, stranger]) {
      const keys = (await call("GET", `/admin/partners/${partner.id}/keys`)).items as { id: string }[];
      known.keys.push(...keys.map((k) => String(k.id)));
    }
    // Keys not yet registered: a partner's key is taken once, so valid additions need fresh ones.
    known.publicKeys = Array.from({ length: 24 }, () => generateKeyPair().publicKeyPem);
    known.assets = (
      (await ctx.signed({ method: "GET", url: "/v1/public/assets" })).json().items as { id: string }[]
    ).map((a) => a.id);
    known.pairs = (
      (await ctx.signed({ method: "GET", url: "/v1/partner/asset-pairs" })).json().items as { id: string }[]
    ).map((p) => p.id);
    for (const n of [1, 2, 3]) {
      const created = await ctx.signed({
        method: "POST",
        url: "/v1/partner/clients",
        body: clientPayload(n),
      });
      assert.equal(created.statusCode, 201, created.body);
      const id = created.json().result.partner_client_id as string;
      known.clients.push(id);
      const deposit = await ctx.signed({
        method: "POST",
        url: "/v1/partner/deposits",
        body: { partner_client_id: id, asset_id: "AED", amount: "100", partner_order_ref: `setup-${n}` },
      });
      if (deposit.statusCode === 200) known.orders.push(String(deposit.json().result.id));
    }
    for (const n of [1, 2]) {
      const made = await ctx.signed({
        method: "POST",
        url: "/v1/partner/webhook-endpoints",
        body: { url: `http://127.0.0.1:9/hooks/${n}`, event_types: [] },
      });
      assert.equal(made.statusCode, 201, made.body);
      known.endpoints.push(String(made.json().result.id));
    }
    const password = "console fuzz passphrase 0123456789";
    await call("POST", "/admin/operators", { email: "console@fuzz.example", role: "admin", password });
    const signIn = await send(
      "POST",
      "/admin/session",
      Buffer.from(JSON.stringify({ email: "console@fuzz.example", password })),
      "application/json",
    );
    assert.equal(signIn.response.status, 200, signIn.response.body.toString());
    consoleCookie = String(signIn.response.headers["set-cookie"]).split(";")[0]!;
    for (const role of ["viewer", "compliance", "admin"]) {
      const made = await call("POST", "/admin/operators", { email: `${role}@fuzz.example`, role });
      known.operators.push(String((made.result as { id: string }).id));
    }
  });

  after(async () => {
    http?.close();
    await admin?.close();
    await ctx?.close();
  });

  test("the document holds every route of the access table", () => {
    const expected = [...Object.keys(adminRouteRoles), ...publicAdminRoutes].filter((k) => !notFuzzed.has(k));
    assert.deepEqual(new Set(documentedOperations(doc).map((op) => op.id)), new Set(expected));
  });

  test("routes fuzzed", async (t) => {
    assert.ok(operations.length > 0, `no route among ADMIN_FUZZ_ROUTES=${process.env.ADMIN_FUZZ_ROUTES}`);
    const failures: string[] = [];
    for (const [index, op] of operations.entries()) {
      const drafts = fc.sample(requestArbitrary(op, { doc, hint }, limits.jsonBodyBytesMax), {
        seed: seed + index,
        numRuns: runs,
      });
      const findings = new Map<string, { count: number; example: string }>();
      const statuses = new Map<number, number>();
      const deadline = Date.now() + routeBudgetMs;
      let next = 0;
      let sent = 0;
      await Promise.all(
        Array.from({ length: concurrency }, async () => {
          while (next < drafts.length && Date.now() < deadline) {
            const draft = drafts[next++]!;
            const { body, contentType } = materialise(draft, (live) => {
              throw new Error(`no value for ${live.name}`);
            });
            let problems: string[];
            let status = 0;
            let example = `${draft.label}: ${draft.method} ${draft.target.slice(0, 200)} ${body.toString("utf8").slice(0, 200)}`;
            try {
              const r = await send(draft.method, draft.target, body, contentType);
              status = r.response.status;
              problems = checker.check({
                op,
                sent: { method: draft.method, target: draft.target, headers: r.headers, body },
                response: r.response,
              });
              // The console answers its errors as pages for a browser, not in the API's shape.
              const type = String(r.response.headers["content-type"]);
              if (op.path.startsWith("/console") && type.startsWith("text/html")) {
                problems = problems.filter((p) => !consoleErrorPage.has(p.replace(/ ".*$/, "")));
              }
              example += `\n    → ${status} ${r.response.body.toString("utf8").slice(0, 300)}`;
              const server = serverErrors.get(r.requestId);
              if (server !== undefined) example += `\n    server: ${server}`;
            } catch (err) {
              problems = [`no answer: ${(err as Error).message}`];
            }
            sent++;
            statuses.set(status, (statuses.get(status) ?? 0) + 1);
            for (const p of problems) {
              const key = `${p} [${draft.label.split(":")[0]}]`;
              const f = findings.get(key);
              if (f === undefined) findings.set(key, { count: 1, example });
              else f.count++;
            }
          }
        }),
      );
      t.diagnostic(
        `${op.id}: ${sent} requests: ${[...statuses]
          .sort(([a], [b]) => a - b)
          .map(([s, n]) => `${s}×${n}`)
          .join(" ")}`,
      );
      const health = await send("GET", "/healthz", Buffer.alloc(0), null);
      if (health.response.status !== 200)
        failures.push(`${op.id}: /healthz answered ${health.response.status} after it`);
      if (sent !== runs)
        failures.push(`${op.id}: only ${sent} of ${runs} requests within ${routeBudgetMs} ms`);
      for (const [problem, f] of [...findings].sort(([, a], [, b]) => b.count - a.count).slice(0, 8)) {
        failures.push(`${op.id}: ${problem} ×${f.count}\n    ${f.example}`);
      }
    }
    assert.equal(
      failures.length,
      0,
      `FUZZ_SEED=${seed} ADMIN_FUZZ_RUNS=${runs} to replay:\n${failures.join("\n")}`,
    );
  });
});
