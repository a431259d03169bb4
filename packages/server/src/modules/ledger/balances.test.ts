// docs/reference.md §2.6, §4.2 (balances): every catalog asset, zeros included, USD values from the
// asset's rate; 2008, 2012, and a 422 without partner_client_id.

import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { insertClient } from "../../testing/fixtures.ts";
import { startTestContext, type TestContext } from "../../testing/harness.ts";

describe("balances", () => {
  let ctx: TestContext;
  before(async () => {
    ctx = await startTestContext();
    await insertClient(ctx.services.database.db, ctx.partner.id, 1);
    await insertClient(ctx.services.database.db, ctx.partner.id, 2, { status: "rejected", active: false });
    for (const [asset, amount, ref] of [
      ["AED", "1000", "a"],
      ["USD", "250.25", "b"],
      ["EUR", "10", "c"],
    ]) {
      const res = await ctx.signed({
        method: "POST",
        url: "/v1/partner/deposits",
        body: { partner_client_id: "client-1", asset_id: asset, amount, partner_order_ref: ref },
      });
      assert.equal(res.statusCode, 200);
    }
  });
  after(async () => {
    await ctx.close();
  });

  test("the list has every catalog asset, zeros written 0E-8, USD values from the rates", async () => {
    const res = await ctx.signed({ method: "GET", url: "/v1/partner/balances?partner_client_id=client-1" });
    assert.equal(res.statusCode, 200);
    const items = res.json().items as Record<string, string>[];
    const assets = (await ctx.app.inject({ method: "GET", url: "/v1/public/assets" })).json().items as {
      id: string;
    }[];
    assert.deepEqual(items.map((i) => i.asset_id).sort(), assets.map((a) => a.id).sort());
    const by = Object.fromEntries(items.map((i) => [i.asset_id, i]));
    assert.deepEqual(by.AED, {
      asset_id: "AED",
      balance: "1000.00000000",
      available_balance: "1000.00000000",
      balance_usd: "272.29408000",
      available_balance_usd: "272.29408000",
    });
    assert.equal(by.USD?.balance_usd, "250.25000000");
    assert.equal(by.EUR?.balance_usd, "10.80000000");
    assert.deepEqual(by.BTC, {
      asset_id: "BTC",
      balance: "0E-8",
      available_balance: "0E-8",
      balance_usd: "0E-8",
      available_balance_usd: "0E-8",
    });
  });

  test("GET /balances/{asset_id}: {result}; 2012 for an unknown asset; 2008 first for an unknown client", async () => {
    const res = await ctx.signed({
      method: "GET",
      url: "/v1/partner/balances/USD?partner_client_id=client-1",
    });
    assert.equal(res.statusCode, 200);
    assert.equal(res.json().result.available_balance, "250.25000000");
    const zero = await ctx.signed({
      method: "GET",
      url: "/v1/partner/balances/SOL?partner_client_id=client-1",
    });
    assert.equal(zero.json().result.balance, "0E-8");
    const bad = await ctx.signed({
      method: "GET",
      url: "/v1/partner/balances/XYZ?partner_client_id=client-1",
    });
    assert.equal(bad.statusCode, 400);
    assert.deepEqual(bad.json(), { code: 2012, msg: "Invalid asset", msg_detail: null });
    const both = await ctx.signed({
      method: "GET",
      url: "/v1/partner/balances/XYZ?partner_client_id=nobody",
    });
    assert.equal(both.json().code, 2008);
  });

  test("balances of a deactivated or unverified client are still readable", async () => {
    const res = await ctx.signed({ method: "GET", url: "/v1/partner/balances?partner_client_id=client-2" });
    assert.equal(res.statusCode, 200);
  });

  test("2008 for an unknown or another partner's client; 422 without partner_client_id", async () => {
    const unknown = await ctx.signed({ method: "GET", url: "/v1/partner/balances?partner_client_id=nobody" });
    assert.deepEqual(unknown.json(), { code: 2008, msg: "Invalid client ID", msg_detail: null });
    const other = await ctx.addPartner();
    const foreign = await ctx.signed({
      method: "GET",
      url: "/v1/partner/balances?partner_client_id=client-1",
      partner: other,
    });
    assert.equal(foreign.json().code, 2008);
    for (const url of ["/v1/partner/balances", "/v1/partner/balances/AED"]) {
      const missing = await ctx.signed({ method: "GET", url });
      assert.equal(missing.statusCode, 422);
      assert.deepEqual(missing.json().msg_detail, [
        { loc: ["query", "partner_client_id"], msg: "Field required", type: "missing" },
      ]);
    }
  });

  test("in catalog order; a crypto asset is valued at the sell price of its USD pair, the one and the list agree", async () => {
    const priced = await ctx.adminRequest("PUT", "/admin/pairs/BTC-USD/price", {
      buy: "100000",
      sell: "90000",
      reason: "test set-up",
    });
    assert.equal(priced.statusCode, 200, priced.body);
    const quote = await ctx.signed({
      method: "POST",
      url: "/v1/partner/quotes",
      body: { partner_client_id: "client-1", asset_pair: "BTC-USD", side: "buy", base_amount: "0.001" },
    });
    assert.equal(quote.statusCode, 200, quote.body);
    const executed = await ctx.signed({
      method: "POST",
      url: "/v1/partner/quotes/execute",
      body: { partner_client_id: "client-1", token: quote.json().result.token },
    });
    assert.equal(executed.json().result.status, "completed", executed.body);

    const list = await ctx.signed({ method: "GET", url: "/v1/partner/balances?partner_client_id=client-1" });
    const items = list.json().items as Record<string, string>[];
    const assets = (await ctx.app.inject({ method: "GET", url: "/v1/public/assets" })).json().items as {
      id: string;
    }[];
    assert.deepEqual(
      items.map((i) => i.asset_id),
      assets.map((a) => a.id),
    );
    const btc = items.find((i) => i.asset_id === "BTC");
    assert.deepEqual(btc, {
      asset_id: "BTC",
      balance: "0.00100000",
      available_balance: "0.00100000",
      balance_usd: "90.00000000",
      available_balance_usd: "90.00000000",
    });
    const one = await ctx.signed({
      method: "GET",
      url: "/v1/partner/balances/BTC?partner_client_id=client-1",
    });
    assert.deepEqual(one.json().result, btc);
  });
});
