// A path parameter holding a NUL names no record (docs/reference.md §4.5, §4.7, §6.2;
// docs/decisions.md "Hardening"): a 404, like any other text that is not an id.

import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { clientPayload, clientsState, insertClient } from "../testing/fixtures.ts";
import { startTestContext, type TestContext } from "../testing/harness.ts";

describe("a NUL in a path parameter names nothing", () => {
  let ctx: TestContext;
  let client: string;
  before(async () => {
    ctx = await startTestContext();
    client = (await insertClient(ctx.services.database.db, ctx.partner.id, 1)).partnerClientId;
  });
  after(async () => {
    await ctx.close();
  });

  const notFound = { code: 404, msg: "Not Found", msg_detail: null };

  test("every route with an id in its path answers 404, changing nothing", async () => {
    const webhook = await ctx.signed({
      method: "POST",
      url: "/v1/partner/webhook-endpoints",
      body: { url: "https://hooks.example.com/counterpart" },
    });
    assert.equal(webhook.statusCode, 201, webhook.body);
    const requests: { method: "GET" | "PUT" | "POST" | "DELETE"; url: string; body?: unknown }[] = [
      { method: "GET", url: "/v1/partner/orders/%00" },
      { method: "GET", url: "/v1/partner/orders/1%00" },
      { method: "GET", url: "/v1/partner/orders/ref/%00" },
      { method: "GET", url: "/v1/partner/orders/ref/fund%001" },
      { method: "GET", url: "/v1/partner/events/%00" },
      { method: "GET", url: "/v1/partner/asset-pairs/BTC-AED%00" },
      { method: "GET", url: `/v1/partner/balances/%00?partner_client_id=${client}` },
      { method: "GET", url: `/v1/partner/clients/${client}/documents/%00` },
      { method: "GET", url: `/v1/partner/clients/${client}/documents/1%00` },
      { method: "GET", url: "/v1/partner/clients/%00/" },
      { method: "GET", url: `/v1/partner/clients/${client}%00/documents` },
      { method: "PUT", url: "/v1/partner/clients/%00/", body: clientPayload(9) },
      // The body would be a 422 on its own: the route is judged first.
      { method: "PUT", url: "/v1/partner/clients/%00/activation", body: { active: "no" } },
      { method: "PUT", url: `/v1/partner/clients/${client}%00/activation`, body: { active: false } },
      { method: "GET", url: "/v1/partner/webhook-endpoints/%00" },
      { method: "DELETE", url: "/v1/partner/webhook-endpoints/%00" },
      { method: "POST", url: "/v1/partner/webhook-endpoints/%00/test" },
      { method: "GET", url: "/v1/partner/webhook-endpoints/%00/deliveries" },
    ];
    for (const r of requests) {
      const before_ = await clientsState(ctx.services.database.db);
      const res = await ctx.signed(r);
      assert.equal(res.statusCode, 404, `${r.method} ${r.url}: ${res.body}`);
      assert.deepEqual(res.json(), notFound, `${r.method} ${r.url}`);
      assert.deepEqual(await clientsState(ctx.services.database.db), before_, `${r.method} ${r.url}`);
    }
    for (const url of ["/v1/public/assets/AED%00", "/v1/public/countries/%00"]) {
      const res = await ctx.app.inject({ method: "GET", url });
      assert.equal(res.statusCode, 404, `${url}: ${res.body}`);
      assert.deepEqual(res.json(), notFound, url);
    }
    const client1 = await ctx.signed({ method: "GET", url: `/v1/partner/clients/${client}/` });
    assert.equal(client1.json().result.active, true, "the activation switch changed the client");
    const endpoints = await ctx.signed({ method: "GET", url: "/v1/partner/webhook-endpoints" });
    assert.equal(endpoints.json().items.length, 1);
  });

  test("a NUL in a query value is still a 422 at its name", async () => {
    const res = await ctx.signed({ method: "GET", url: "/v1/partner/orders?partner_client_id=a%00" });
    assert.equal(res.statusCode, 422, res.body);
    assert.deepEqual(res.json().msg_detail, [
      {
        loc: ["query", "partner_client_id"],
        msg: "String should not contain NUL characters",
        type: "string_nul",
      },
    ]);
  });
});
