// The documented examples of every event type (event-examples.ts, shown in the OpenAPI document
// and docs/reference.md §6.1) are pinned: each one passes the real Event schema (and its data the
// schema of its resource), and has exactly the shape of an event of that type the running service
// writes: the same fields, nested the same way, each of the same JSON type.

import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { Ajv } from "ajv";
import addFormatsModule from "ajv-formats";
import type { TSchema } from "typebox";
import { feedSettled } from "../../testing/events.ts";
import { clientPayload, multipartBody, sampleFile } from "../../testing/fixtures.ts";
import { startTestContext, type TestContext } from "../../testing/harness.ts";
import { ClientSchema } from "../clients/index.ts";
import { DocumentSchema } from "../documents/index.ts";
import { OrderSchema } from "../orders/index.ts";
import { eventExamples, webhookTestExample } from "./event-examples.ts";
import { EventSchema, type EventType, eventTypes, WebhookTestEventSchema } from "./event-views.ts";

const addFormats = addFormatsModule as unknown as (ajv: Ajv, formats?: string[]) => Ajv;

/** The JSON shape of a value: its type, and for objects and arrays the shapes inside, in order. */
function shape(v: unknown): unknown {
  if (v === null) return "null";
  if (Array.isArray(v)) return v.map(shape);
  if (typeof v === "object") return Object.entries(v).map(([k, x]) => [k, shape(x)]);
  return typeof v;
}

function validator(schema: TSchema) {
  const ajv = new Ajv({ allErrors: true, strict: false });
  addFormats(ajv, ["date", "date-time", "email", "uri", "uuid"]);
  return ajv.compile(schema);
}

const dataSchema = (type: string): TSchema =>
  type.startsWith("order.") ? OrderSchema : type.startsWith("client.") ? ClientSchema : DocumentSchema;

describe("the event examples", () => {
  let ctx: TestContext;
  let dataDir: string;
  const written = new Map<string, unknown>();
  let testEvent: Record<string, unknown> | undefined;

  before(async () => {
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "cp-event-examples-"));
    ctx = await startTestContext({ env: { DATA_DIR: dataDir } });
    await ctx.adminRequest("PUT", "/admin/pairs/BTC-AED/price", { buy: "350000", sell: "349000" });
    const ok = (res: { statusCode: number; body: string }, status = 200) =>
      assert.equal(res.statusCode, status, res.body);
    const signed = (method: "POST" | "PUT", url: string, body: unknown) => ctx.signed({ method, url, body });
    const clientPath = `/admin/partners/${ctx.partner.id}/clients/client-1`;
    // One change of each kind, as the examples show them.
    ok(await signed("POST", "/v1/partner/clients", clientPayload(1)), 201);
    ok(
      await signed("PUT", "/v1/partner/clients/client-1/", {
        ...clientPayload(1, { phone: "+971501234567" }),
        partner_client_id: undefined,
        account_type: undefined,
        birth_date: undefined,
        place_of_birth_id: undefined,
      }),
    );
    ok(await signed("POST", "/v1/partner/deposits", depositBody("dep-1", "2000")));
    const quote = async () => {
      const q = await signed("POST", "/v1/partner/quotes", {
        partner_client_id: "client-1",
        asset_pair: "BTC-AED",
        side: "buy",
        base_amount: "0.002",
      });
      ok(q);
      return q.json().result.token as string;
    };
    const execute = (token: string, ref: string) =>
      signed("POST", "/v1/partner/quotes/execute", {
        partner_client_id: "client-1",
        token,
        partner_order_ref: ref,
      });
    const done = await execute(await quote(), "buy-1");
    ok(done);
    assert.equal(done.json().result.status, "completed");
    const late = await quote();
    ok(await signed("POST", "/v1/partner/withdrawals", { ...depositBody("wd-1", "1000"), asset_id: "AED" }));
    const rejected = await execute(late, "buy-2");
    ok(rejected);
    assert.equal(rejected.json().result.status, "rejected");
    const { body, contentType } = multipartBody([
      { name: "type", data: "government_id" },
      { name: "front_file", filename: "id.png", contentType: "image/png", data: sampleFile("png") },
    ]);
    ok(
      await ctx.signed({
        method: "POST",
        url: "/v1/partner/clients/client-1/documents",
        body,
        headers: { "content-type": contentType },
      }),
      201,
    );
    ok(
      await ctx.adminRequest("PUT", `${clientPath}/status`, {
        status: "under_review",
        reason: "documents to check again",
      }),
    );
    ok(
      await ctx.adminRequest("PUT", `${clientPath}/active`, {
        active: false,
        reason: "account closed at the client's request",
      }),
    );

    await feedSettled(ctx.services.database.db);
    const feed = await ctx.signed({ method: "GET", url: "/v1/partner/events?limit=100" });
    ok(feed);
    // The first event of each type; for order.completed, the executed quote's (the richest order).
    for (const e of feed.json().items as { type: string; data: { partner_order_ref?: string } }[]) {
      if (e.type === "order.completed" && e.data.partner_order_ref !== "buy-1") continue;
      if (!written.has(e.type)) written.set(e.type, e);
    }

    // The test event, as the endpoint receives it.
    const ep = await ctx.signed({
      method: "POST",
      url: "/v1/partner/webhook-endpoints",
      body: { url: "http://127.0.0.1:9/hook" },
    });
    ok(ep, 201);
    const id = ep.json().result.id as string;
    ok(await ctx.signed({ method: "POST", url: `/v1/partner/webhook-endpoints/${id}/test` }), 202);
    const row = await ctx.services.database.db
      .selectFrom("webhook_deliveries")
      .select("payload")
      .where("endpoint_id", "=", id)
      .where("event_type", "=", "webhook.test")
      .executeTakeFirstOrThrow();
    testEvent = JSON.parse(String(row.payload));
  });
  after(async () => {
    await ctx.close();
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  function depositBody(ref: string, amount: string) {
    return { partner_client_id: "client-1", asset_id: "AED", amount, partner_order_ref: ref };
  }

  test("there is one example of every type, in the order of eventTypes, and it is of that type", () => {
    assert.deepEqual(Object.keys(eventExamples), [...eventTypes]);
    for (const type of eventTypes) assert.equal(eventExamples[type].type, type);
    assert.equal(webhookTestExample.type, "webhook.test");
  });

  test("each example passes the Event schema, and its data the schema of its resource", () => {
    const event = validator(EventSchema);
    for (const [type, example] of Object.entries(eventExamples)) {
      assert.ok(event(example), `${type}: ${JSON.stringify(event.errors)}`);
      const data = validator(dataSchema(type));
      assert.ok(data(example.data), `${type} data: ${JSON.stringify(data.errors)}`);
    }
    const test = validator(WebhookTestEventSchema);
    assert.ok(test(webhookTestExample), JSON.stringify(test.errors));
  });

  test("each example has the shape of the event the service writes for its type", () => {
    for (const type of eventTypes) {
      const real = written.get(type);
      assert.ok(real !== undefined, `the scenario wrote no ${type} event`);
      assert.deepEqual(shape(eventExamples[type as EventType]), shape(real), type);
    }
    assert.deepEqual(shape(webhookTestExample), shape(testEvent), "webhook.test");
  });

  test("the OpenAPI document shows them on the Event schema and under webhooks", async () => {
    const doc = (await ctx.app.inject({ method: "GET", url: "/openapi.json" })).json();
    assert.deepEqual(doc.components.schemas.Event.examples, Object.values(eventExamples));
    const media = (name: string) => doc.webhooks[name].post.requestBody.content["application/json"];
    assert.deepEqual(media("event").schema, { $ref: "#/components/schemas/Event" });
    assert.deepEqual(
      Object.entries(media("event").examples).map(([k, v]) => [k, (v as { value: unknown }).value]),
      Object.entries(eventExamples),
    );
    assert.deepEqual(media("webhook.test").examples["webhook.test"].value, webhookTestExample);
    assert.deepEqual(doc.components.schemas.WebhookTestEvent.examples, [webhookTestExample]);
  });

  test("docs/reference.md §6.1 shows exactly these examples", () => {
    const reference = fs.readFileSync(
      path.resolve(import.meta.dirname, "../../../../../docs/reference.md"),
      "utf8",
    );
    const section = reference.slice(reference.indexOf("### 6.1 "), reference.indexOf("### 6.2 "));
    const shown = [...section.matchAll(/```json\n([\s\S]*?)\n```/g)].map((m) => JSON.parse(m[1]!));
    assert.deepEqual(shown, [...Object.values(eventExamples), webhookTestExample]);
  });
});
