// Route schemas compiled on first use (http/lazy-schemas.ts): nothing is compiled while the app
// gets ready, a route validates and serialises exactly as before once used, warm() compiles what
// is left, and a schema that cannot compile fails its own route with a 500 and is reported by
// warm(), never the process. Every schema of the real partner and admin apps compiles.

import assert from "node:assert/strict";
import { describe, test } from "node:test";
import Fastify, { type FastifySchemaCompiler } from "fastify";
import { buildAdminApp, buildPartnerApp } from "../app.ts";
import { startTestContext } from "../testing/harness.ts";
import { errorHandler } from "./http-error.ts";
import { LazySchemas } from "./lazy-schemas.ts";
import { validatorCompiler } from "./validation.ts";

/** A Fastify app wired as app.ts wires its own, with a counter of validator compilations. */
function appWith(schemas: LazySchemas) {
  let compiled = 0;
  const counting: FastifySchemaCompiler<unknown> = (route) => {
    compiled++;
    return validatorCompiler(route);
  };
  const app = Fastify({
    exposeHeadRoutes: false,
    schemaController: { compilersFactory: { buildSerializer: schemas.serializerFactory() } },
  });
  app.setValidatorCompiler(schemas.validatorCompiler(counting));
  app.setErrorHandler(errorHandler);
  app.post(
    "/things",
    {
      schema: {
        body: {
          type: "object",
          properties: { n: { type: "integer", minimum: 1 } },
          required: ["n"],
          additionalProperties: false,
        },
        response: { 200: { type: "object", properties: { n: { type: "integer" } } } },
      },
    },
    // The serializer keeps only the properties its schema names.
    async (request) => ({ ...(request.body as object), secret: "not in the schema" }),
  );
  app.get(
    "/other",
    { schema: { querystring: { type: "object", properties: { q: { type: "integer" } } } } },
    async () => ({
      ok: true,
    }),
  );
  return { app, compiledCount: () => compiled };
}

describe("route schemas compiled on first use", () => {
  test("nothing compiles while the app gets ready; a route validates and serialises as before once used", async () => {
    const schemas = new LazySchemas();
    const { app, compiledCount } = appWith(schemas);
    try {
      await app.ready();
      assert.equal(compiledCount(), 0);
      assert.equal(schemas.pending, 3, "two validators and one serializer wait");

      const ok = await app.inject({ method: "POST", url: "/things", payload: { n: 2 } });
      assert.equal(ok.statusCode, 200);
      assert.deepEqual(ok.json(), { n: 2 });
      const bad = await app.inject({ method: "POST", url: "/things", payload: { n: 0 } });
      assert.equal(bad.statusCode, 422);
      assert.equal(bad.json().code, 422);
      const again = await app.inject({ method: "POST", url: "/things", payload: { n: "x" } });
      assert.equal(again.statusCode, 422);
      assert.equal(compiledCount(), 1, "compiled once, on the first request");
      assert.equal(schemas.pending, 1, "the other route's validator still waits");

      assert.deepEqual(await schemas.warm(), []);
      assert.equal(schemas.pending, 0);
      assert.equal(compiledCount(), 2);
      assert.equal((await app.inject({ method: "GET", url: "/other?q=5" })).statusCode, 200);
      assert.equal((await app.inject({ method: "GET", url: "/other?q=x" })).statusCode, 422);
      assert.equal(compiledCount(), 2, "warm() compiled it; the request did not again");
    } finally {
      await app.close();
    }
  });

  test("a schema that cannot compile fails its own route with a 500 and is reported by warm()", async () => {
    const schemas = new LazySchemas();
    const app = Fastify({
      schemaController: { compilersFactory: { buildSerializer: schemas.serializerFactory() } },
    });
    app.setValidatorCompiler(schemas.validatorCompiler(validatorCompiler));
    app.setErrorHandler(errorHandler);
    app.post("/broken", { schema: { body: { type: "no-such-type" } } }, async () => ({ ok: true }));
    app.get("/fine", async () => ({ ok: true }));
    try {
      await app.ready();
      const broken = await app.inject({ method: "POST", url: "/broken", payload: {} });
      assert.equal(broken.statusCode, 500);
      assert.deepEqual(broken.json(), { code: 500, msg: "Internal Server Error", msg_detail: null });
      assert.equal((await app.inject({ method: "GET", url: "/fine" })).statusCode, 200);

      const second = new LazySchemas();
      const other = Fastify();
      other.setValidatorCompiler(second.validatorCompiler(validatorCompiler));
      other.post("/broken", { schema: { body: { type: "no-such-type" } } }, async () => ({ ok: true }));
      await other.ready();
      const failures = await second.warm();
      assert.equal(failures.length, 1);
      assert.equal(second.pending, 0);
      await other.close();
    } finally {
      await app.close();
    }
  });

  test("every schema of the partner and admin apps compiles", async () => {
    const ctx = await startTestContext();
    const schemas = new LazySchemas();
    const partner = buildPartnerApp(ctx.services, { logger: false, schemas });
    const admin = buildAdminApp(ctx.services, {
      logger: false,
      schemas,
      adminToken: "test-admin-token-0123456789",
      metricsText: async () => ({ contentType: "text/plain", body: "" }),
    });
    try {
      await partner.ready();
      await admin.ready();
      assert.ok(schemas.pending > 100, `${schemas.pending} schemas wait`);
      assert.deepEqual(await schemas.warm(), []);
      assert.equal(schemas.pending, 0);
    } finally {
      await partner.close();
      await admin.close();
      await ctx.close();
    }
  });
});
