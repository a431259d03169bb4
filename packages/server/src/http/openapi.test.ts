// The OpenAPI document and the reference page (http/openapi.ts): valid OpenAPI 3.1 by a real
// validator, every schema valid JSON Schema 2020-12; complete (every route the partner app serves,
// except the 405 answers, health checks and the documentation itself); signed and public
// operations marked as such; the errors each route documents; the committed docs/openapi.json
// equal to the generated document; /docs served whole from this origin.

import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { errorCatalog, signRequest } from "@counterpart/protocol";
import { Validator } from "@seriousme/openapi-schema-validator";
import { Ajv2020 } from "ajv/dist/2020.js";
import addFormatsModule from "ajv-formats";
import serverPackage from "../../package.json" with { type: "json" };
import { startTestContext, type TestContext } from "../testing/harness.ts";
import { docsPath, openApiPath, openApiText } from "./openapi.ts";

const addFormats = addFormatsModule as unknown as (ajv: Ajv2020) => Ajv2020;
const committedFile = path.resolve(import.meta.dirname, "../../../../docs/openapi.json");

interface Operation {
  operationId?: string;
  tags?: string[];
  security?: Record<string, string[]>[];
  parameters?: { name: string; in: string; schema: object }[];
  requestBody?: { content: Record<string, { schema: Schema }> };
  responses: Record<string, { description: string; content?: Record<string, { schema: Schema }> }>;
}
interface Schema {
  $ref?: string;
  allOf?: Schema[];
  type?: string;
  format?: string;
  required?: string[];
  properties?: Record<string, Schema & { enum?: unknown[] }>;
}
interface Document {
  openapi: string;
  info: { title: string; version: string; description: string };
  servers: { url: string }[];
  tags: { name: string }[];
  paths: Record<string, Record<string, Operation>>;
  components: { schemas: Record<string, Schema>; securitySchemes: Record<string, Record<string, string>> };
}

const methods = ["get", "post", "put", "delete", "patch", "options", "head"];

function operations(doc: Document): { method: string; path: string; op: Operation }[] {
  const out: { method: string; path: string; op: Operation }[] = [];
  for (const [p, item] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(item))
      if (methods.includes(method)) out.push({ method, path: p, op });
  }
  return out;
}

function operation(doc: Document, method: string, p: string): Operation {
  const op = doc.paths[p]?.[method];
  assert.ok(op, `${method.toUpperCase()} ${p} is documented`);
  return op;
}

/** The codes a documented error response narrows `code` to. */
function documentedCodes(op: Operation, status: string): number[] {
  const schema = op.responses[status]?.content?.["application/json"]?.schema;
  const narrowed = schema?.allOf?.find((s) => s.properties?.code !== undefined);
  return [...((narrowed?.properties?.code?.enum as number[] | undefined) ?? [])].sort((a, b) => a - b);
}

/** Every route the app serves, from Fastify's own route tree: path → methods. */
function servedRoutes(ctx: TestContext): Map<string, Set<string>> {
  const tree = ctx.app.printRoutes({ commonPrefix: false });
  const routes = new Map<string, Set<string>>();
  const stack: string[] = [];
  for (const line of tree.split("\n")) {
    const m = /^((?:[│ ] {3})*)[├└]── (.*?)(?: \(([A-Z, -]+)\))?$/u.exec(line);
    if (m === null) continue;
    const depth = m[1]!.length / 4;
    stack.length = depth;
    stack.push(m[2]!);
    if (m[3] !== undefined) routes.set(stack.join(""), new Set(m[3].split(", ")));
  }
  return routes;
}

let ctx: TestContext;
let doc: Document;

before(async () => {
  ctx = await startTestContext();
  const res = await ctx.app.inject({ method: "GET", url: openApiPath });
  assert.equal(res.statusCode, 200, res.body);
  doc = res.json();
});
after(() => ctx.close());

describe("the OpenAPI document", () => {
  test("GET /openapi.json: public JSON, OpenAPI 3.1.0, the package's version, relative server, the tags", async () => {
    const res = await ctx.app.inject({ method: "GET", url: openApiPath });
    assert.equal(res.statusCode, 200);
    assert.match(String(res.headers["content-type"]), /^application\/json/);
    assert.equal(doc.openapi, "3.1.0");
    assert.equal(doc.info.title, "Counterpart partner API");
    assert.equal(doc.info.version, serverPackage.version);
    assert.deepEqual(doc.servers, [{ url: "/" }]);
    assert.deepEqual(
      doc.tags.map((t) => t.name),
      [
        "public",
        "clients",
        "documents",
        "funding",
        "balances",
        "trading",
        "orders",
        "asset-pairs",
        "events",
        "webhooks",
      ],
    );
    const tagNames = new Set(doc.tags.map((t) => t.name));
    for (const { method, path: p, op } of operations(doc)) {
      assert.ok(op.tags?.length === 1 && tagNames.has(op.tags[0]!), `${method} ${p} has one declared tag`);
      assert.ok(op.operationId, `${method} ${p} has an operationId`);
    }
    const ids = operations(doc).map((o) => o.op.operationId);
    assert.equal(new Set(ids).size, ids.length, "operationIds are unique");
  });

  test("valid OpenAPI 3.1 (@seriousme/openapi-schema-validator); every schema compiles as strict JSON Schema 2020-12", async () => {
    const validator = new Validator();
    const result = await validator.validate(structuredClone(doc) as unknown as Record<string, unknown>);
    assert.equal(result.valid, true, JSON.stringify(result.errors, null, 2));
    assert.equal(validator.version, "3.1");

    // The OpenAPI schema does not look inside Schema Objects: compile each one, references
    // resolved, with an Ajv that refuses unknown keywords (such as the validator's private x-error).
    const resolved = validator.resolveRefs() as unknown as Document;
    const ajv = new Ajv2020({ strict: true, allowUnionTypes: true });
    addFormats(ajv);
    ajv.addFormat("binary", true);
    let compiled = 0;
    const compile = (where: string, schema: object | undefined) => {
      assert.ok(schema, `${where} has a schema`);
      assert.doesNotThrow(() => ajv.compile(schema), where);
      compiled++;
    };
    for (const { method, path: p, op } of operations(resolved)) {
      for (const param of op.parameters ?? [])
        compile(`${method} ${p} ${param.in} ${param.name}`, param.schema);
      for (const [type, media] of Object.entries(op.requestBody?.content ?? {})) {
        compile(`${method} ${p} body ${type}`, media.schema);
      }
      for (const [status, response] of Object.entries(op.responses)) {
        for (const [type, media] of Object.entries(response.content ?? {})) {
          compile(`${method} ${p} ${status} ${type}`, media.schema);
        }
      }
    }
    for (const [name, schema] of Object.entries(resolved.components.schemas)) compile(name, schema);
    assert.ok(compiled > 100, `${compiled} schemas compiled`);
    assert.doesNotMatch(JSON.stringify(doc), /"x-error"/);
  });

  test("every route the app serves is documented with its method, except 405 answers, health and the docs", async () => {
    const served = servedRoutes(ctx);
    assert.ok(served.has("/v1/partner/deposits") && served.has("/healthz"), [...served.keys()].join("\n"));
    const documented = new Set(
      operations(doc).map((o) => `${o.method.toUpperCase()} ${o.path.replace(/\{([^}]+)\}/g, ":$1")}`),
    );
    // Every documented operation is a route the app serves.
    for (const key of documented) {
      const [method, url] = key.split(" ") as [string, string];
      assert.ok(served.get(url)?.has(method), `${key} is served`);
    }
    // Every route the app serves is documented, or answers 405 (the answers added for the other
    // methods of a known path), or is not part of the interface.
    const outside = (url: string) =>
      url === "/healthz" || url === "/readyz" || url === openApiPath || url.startsWith(docsPath);
    let probed = 0;
    for (const [url, servedMethods] of served) {
      if (outside(url)) {
        assert.ok(!Object.keys(doc.paths).some((p) => p === url), `${url} is not documented`);
        continue;
      }
      for (const method of servedMethods) {
        if (documented.has(`${method} ${url}`)) continue;
        // HEAD answers every GET route like GET does.
        if (method === "HEAD" && documented.has(`GET ${url}`)) continue;
        const target = url.replace(/:[a-z_]+/g, "x1");
        ctx.clock.advance(1);
        // A QUERY must carry a Content-Type (RFC 10008 §2; without one it is a 400 anywhere).
        const body = method === "QUERY" ? "{}" : "";
        const headers: Record<string, string> = url.startsWith("/v1/partner")
          ? signRequest({
              partnerId: ctx.partner.id,
              privateKey: ctx.partner.privateKeyPem,
              method,
              target,
              body,
              nowMs: ctx.clock.nowMs(),
            })
          : {};
        if (body !== "") headers["content-type"] = "application/json";
        const res = await ctx.app.inject({
          method: method as "GET",
          url: target,
          headers,
          ...(body === "" ? {} : { payload: body }),
          remoteAddress: "127.0.0.1",
        });
        assert.equal(res.statusCode, 405, `${method} ${url} is served but not documented: ${res.body}`);
        probed++;
      }
    }
    assert.ok(probed > 50, `${probed} undocumented methods answered 405`);
    for (const p of ["/healthz", "/readyz", openApiPath, docsPath]) assert.equal(doc.paths[p], undefined, p);
  });

  test("signed operations: the three signature headers required together, and 401; public ones: security []", () => {
    const schemes = doc.components.securitySchemes;
    assert.deepEqual(
      Object.values(schemes).map((s) => [s.type, s.in, s.name]),
      [
        ["apiKey", "header", "X-Partner-ID"],
        ["apiKey", "header", "X-Timestamp"],
        ["apiKey", "header", "X-Signature"],
      ],
    );
    // The canonical string (docs/reference.md §5.2) is described.
    const described = `${doc.info.description}\n${Object.values(schemes)
      .map((s) => s.description)
      .join("\n")}`;
    for (const part of ["TIMESTAMP", "METHOD", "PATH", "BODY_HASH", "SHA-256", "Ed25519", "Base64"]) {
      assert.ok(described.includes(part), `the scheme describes ${part}`);
    }
    let signed = 0;
    let open = 0;
    for (const { method, path: p, op } of operations(doc)) {
      const where = `${method.toUpperCase()} ${p}`;
      if (p.startsWith("/v1/partner/")) {
        signed++;
        assert.deepEqual(op.security, [{ PartnerID: [], Timestamp: [], Signature: [] }], where);
        assert.deepEqual(documentedCodes(op, "401"), [401], where);
      } else {
        open++;
        assert.deepEqual(op.security, [], where);
        assert.equal(op.responses["401"], undefined, where);
      }
    }
    assert.equal(signed, 28);
    assert.equal(open, 6);
  });

  test("errors: one ErrorBody and one ValidationError component, codes from the catalog, 500 everywhere", () => {
    const { ErrorBody, ValidationError } = doc.components.schemas;
    assert.deepEqual(ErrorBody?.required, ["code", "msg", "msg_detail"]);
    assert.deepEqual(ValidationError?.required, ["code", "msg", "msg_detail"]);
    const detail = ValidationError?.properties?.msg_detail as { type: string; items: Schema };
    assert.equal(detail.type, "array");
    assert.deepEqual(detail.items.required, ["loc", "msg", "type"]);

    const catalog = Object.values(errorCatalog);
    for (const { method, path: p, op } of operations(doc)) {
      const where = `${method.toUpperCase()} ${p}`;
      assert.ok(op.responses["500"], `${where} documents 500`);
      for (const [status, response] of Object.entries(op.responses)) {
        if (Number(status) < 400) continue;
        const schema = response.content?.["application/json"]?.schema;
        const base = status === "422" ? "ValidationError" : "ErrorBody";
        assert.equal(schema?.allOf?.[0]?.$ref, `#/components/schemas/${base}`, `${where} ${status}`);
        for (const code of documentedCodes(op, status)) {
          const entries = catalog.filter((e) => e.code === code && e.status === Number(status));
          assert.ok(entries.length > 0, `${where} ${status}: ${code} is in the catalog with that status`);
          if (status === "400") {
            assert.ok(
              entries.some((e) => response.description.includes(`\`${code}\` ${e.msg}`)),
              `${where}: the description lists ${code} and its message`,
            );
          }
        }
      }
      // A body can be too large; inputs can be invalid.
      if (op.requestBody) assert.ok(op.responses["413"], `${where} documents 413`);
      if (op.requestBody || op.parameters) assert.ok(op.responses["422"], `${where} documents 422`);
    }
  });

  test("422 on every operation (a NUL in any query value), 404 on those with path parameters (one that cannot be decoded)", async () => {
    for (const { method, path: p, op } of operations(doc)) {
      const where = `${method.toUpperCase()} ${p}`;
      assert.ok(op.responses["422"], `${where} documents 422`);
      if (p.includes("{")) assert.ok(op.responses["404"], `${where} documents 404`);
    }
    const nul = await ctx.app.inject({ method: "GET", url: "/v1/public/assets?x=%00" });
    assert.equal(nul.statusCode, 422, nul.body);
    const undecodable = await ctx.signed({ method: "GET", url: "/v1/partner/clients/%ZZ/" });
    assert.equal(undecodable.statusCode, 404, undecodable.body);
  });

  test("409 (2020) on deposits, withdrawals and execute, and nowhere else", () => {
    const with409 = operations(doc)
      .filter((o) => o.op.responses["409"] !== undefined)
      .map((o) => `${o.method.toUpperCase()} ${o.path}`);
    assert.deepEqual(with409.sort(), [
      "POST /v1/partner/deposits",
      "POST /v1/partner/quotes/execute",
      "POST /v1/partner/withdrawals",
    ]);
    for (const p of ["/v1/partner/deposits", "/v1/partner/withdrawals", "/v1/partner/quotes/execute"]) {
      assert.deepEqual(documentedCodes(operation(doc, "post", p), "409"), [2020], p);
    }
  });

  test("the 400 codes each route documents are the contract's (docs/reference.md §4, §7.3)", () => {
    const expected: [string, string, number[]][] = [
      ["post", "/v1/partner/deposits", [2008, 2009, 2010, 2012]],
      ["post", "/v1/partner/withdrawals", [2008, 2009, 2010, 2012, 3005]],
      ["post", "/v1/partner/quotes", [2008, 2009, 2010, 2013, 3005, 4000, 4001, 4003, 4004]],
      ["post", "/v1/partner/quotes/execute", [2008, 2009, 2010, 4008]],
      ["post", "/v1/partner/clients", [2016, 2021, 2022, 2023, 2024, 2025, 2026, 2027, 2028]],
      ["put", "/v1/partner/clients/{partner_client_id}/", [2008, 2016, 2022, 2023, 2025, 2027, 2028]],
      ["get", "/v1/partner/clients/{partner_client_id}/", [2008]],
      ["get", "/v1/partner/balances", [2008]],
      ["get", "/v1/partner/balances/{asset_id}", [2008, 2012]],
      ["get", "/v1/partner/orders", [2008]],
      ["get", "/v1/partner/clients", []],
      ["get", "/v1/partner/asset-pairs/{asset_pair_id}", []],
    ];
    for (const [method, p, codes] of expected) {
      assert.deepEqual(documentedCodes(operation(doc, method, p), "400"), codes, `${method} ${p}`);
    }
    // 404 where a path names a resource that may not exist (docs/reference.md §7.3 note 3).
    for (const [method, p] of [
      ["get", "/v1/public/assets/{asset_id}"],
      ["get", "/v1/public/countries/{country_id}"],
      ["get", "/v1/partner/asset-pairs/{asset_pair_id}"],
      ["get", "/v1/partner/orders/{order_id}"],
      ["get", "/v1/partner/orders/ref/{partner_order_ref}"],
      ["get", "/v1/partner/clients/{partner_client_id}/documents/{document_id}"],
    ] as const) {
      assert.deepEqual(documentedCodes(operation(doc, method, p), "404"), [404], `${method} ${p}`);
    }
    // 503 where a transaction may give up after its retries, or the file store may fail (a
    // download), and wherever a body is read (every signed request, whatever its method, and every
    // request with a body): past the bytes of bodies the process holds at once.
    const with503 = operations(doc)
      .filter((o) => o.op.responses["503"] !== undefined)
      .map((o) => `${o.method.toUpperCase()} ${o.path}`);
    const readsABody = operations(doc)
      .filter((o) => (o.op.security?.length ?? 0) > 0 || o.op.requestBody !== undefined)
      .map((o) => `${o.method.toUpperCase()} ${o.path}`);
    assert.deepEqual(with503.sort(), [...readsABody, "GET /v1/files/{key}"].sort());
    for (const transactional of [
      "POST /v1/partner/clients/{partner_client_id}/documents",
      "POST /v1/partner/deposits",
      "POST /v1/partner/quotes/execute",
      "POST /v1/partner/withdrawals",
    ]) {
      assert.ok(with503.includes(transactional), transactional);
    }
    // Quote errors carry the quote (and a limit) in msg_detail.
    const quote400 = operation(doc, "post", "/v1/partner/quotes").responses["400"];
    const narrowed = quote400?.content?.["application/json"]?.schema.allOf?.[1];
    assert.match(JSON.stringify(narrowed?.properties?.msg_detail), /"quote"/);
  });

  test("the document upload is multipart/form-data with binary file fields", () => {
    const op = operation(doc, "post", "/v1/partner/clients/{partner_client_id}/documents");
    assert.deepEqual(Object.keys(op.requestBody?.content ?? {}), ["multipart/form-data"]);
    const form = op.requestBody!.content["multipart/form-data"]!.schema;
    assert.deepEqual(form.required, ["type", "front_file"]);
    assert.equal(form.properties?.front_file?.format, "binary");
    assert.equal(form.properties?.back_file?.format, "binary");
    assert.deepEqual(form.properties?.type?.enum?.length, 6);
    assert.deepEqual(
      Object.keys(op.responses).filter((s) => s.startsWith("2")),
      ["201"],
    );
  });

  test("docs/openapi.json is the generated document (after changing a route: npm run openapi)", () => {
    const committed = fs.existsSync(committedFile) ? fs.readFileSync(committedFile, "utf8") : "";
    assert.ok(
      committed === openApiText(doc),
      "docs/openapi.json differs from the document the routes generate: run `npm run openapi` and commit it",
    );
  });
});

describe("the reference page", () => {
  test("GET /docs: HTML whose scripts, styles and icons are all served here; no other host", async () => {
    for (const url of [docsPath, `${docsPath}/`]) {
      const res = await ctx.app.inject({ method: "GET", url });
      assert.equal(res.statusCode, 200, url);
      assert.match(String(res.headers["content-type"]), /^text\/html/);
      const csp = String(res.headers["content-security-policy"]);
      assert.match(csp, /default-src 'self'/);
      assert.doesNotMatch(csp, /https?:|\*/, "the policy allows no other origin");
      assert.doesNotMatch(res.body, /(?:https?:)?\/\/[a-z0-9.-]+/i, `${url}: no reference to another host`);

      const refs = [...res.body.matchAll(/\b(?:src|href)="([^"]+)"/g)].map((m) => m[1]!);
      assert.ok(refs.filter((r) => r.endsWith(".js")).length >= 3, `${url}: scripts`);
      assert.ok(refs.filter((r) => r.endsWith(".css")).length >= 1, `${url}: styles`);
      for (const ref of refs) {
        const asset = new URL(ref, `http://localhost${url}`);
        assert.equal(asset.host, "localhost");
        const got = await ctx.app.inject({ method: "GET", url: asset.pathname });
        assert.equal(got.statusCode, 200, `${url} → ${asset.pathname}`);
        assert.ok(got.rawPayload.length > 0, asset.pathname);
        if (asset.pathname.endsWith(".css")) {
          assert.doesNotMatch(
            got.body,
            /@import|url\(\s*["']?(?:https?:)?\/\//,
            `${asset.pathname} loads nothing`,
          );
        }
      }
    }
    // The page loads the document from ./json, next to it: the same document.
    const init = await ctx.app.inject({ method: "GET", url: `${docsPath}/static/swagger-initializer.js` });
    assert.match(init.body, /resolveUrl\('\.\/json'\)/);
    const json = await ctx.app.inject({ method: "GET", url: `${docsPath}/json` });
    assert.deepEqual(json.json(), doc);
  });
});
