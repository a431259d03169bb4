// The public catalog and the signed asset-pair endpoints (docs/decisions.md, "Responses the
// contract leaves open" and "Wire").

import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { startTestContext, type TestContext } from "../../testing/harness.ts";
import { countryIds, restrictedCountryIds, seedAssets, seedPairs } from "./catalog-seed.ts";

describe("catalog endpoints", () => {
  let ctx: TestContext;
  before(async () => {
    ctx = await startTestContext();
  });
  after(async () => {
    await ctx.close();
  });

  test("GET /v1/public/assets lists every asset with the contract's fields and flags", async () => {
    const res = await ctx.app.inject({ method: "GET", url: "/v1/public/assets" });
    assert.equal(res.statusCode, 200);
    const items = res.json().items as Record<string, unknown>[];
    assert.deepEqual(items.map((a) => a.id).sort(), seedAssets.map((a) => a.id).sort());
    const aed = items.find((a) => a.id === "AED");
    assert.deepEqual(aed, {
      id: "AED",
      type: "fiat",
      name_en: "UAE Dirham",
      decimal_places: 2,
      published: true,
      depositable: true,
      withdrawable: true,
    });
    const usdt = items.find((a) => a.id === "USDT");
    assert.equal(usdt?.decimal_places, 6);
    assert.equal(usdt?.depositable, false);
  });

  test("GET /v1/public/assets/{id}: 200 {result}, 404 when missing (ids are case-sensitive)", async () => {
    const res = await ctx.app.inject({ method: "GET", url: "/v1/public/assets/BTC" });
    assert.equal(res.statusCode, 200);
    assert.equal(res.json().result.id, "BTC");
    assert.equal(res.json().result.type, "crypto");
    for (const id of ["XYZ", "btc"]) {
      const missing = await ctx.app.inject({ method: "GET", url: `/v1/public/assets/${id}` });
      assert.equal(missing.statusCode, 404);
      assert.deepEqual(missing.json(), { code: 404, msg: "Not Found", msg_detail: null });
    }
  });

  test("GET /v1/public/countries lists the supported countries; restricted ones are absent", async () => {
    const res = await ctx.app.inject({ method: "GET", url: "/v1/public/countries" });
    const items = res.json().items as { id: string; name: string }[];
    assert.equal(items.length, countryIds.length - restrictedCountryIds.length);
    assert.deepEqual(
      items.find((c) => c.id === "ae"),
      { id: "ae", name: "United Arab Emirates" },
    );
    for (const c of items) assert.match(c.id, /^[a-z]{2}$/);
    for (const r of restrictedCountryIds)
      assert.equal(
        items.find((c) => c.id === r),
        undefined,
      );
  });

  test("GET /v1/public/countries/{id}: 200 {result}; 404 for upper case, alpha-3, unknown, restricted", async () => {
    const res = await ctx.app.inject({ method: "GET", url: "/v1/public/countries/sa" });
    assert.deepEqual(res.json(), { result: { id: "sa", name: "Saudi Arabia" } });
    for (const id of ["AE", "are", "zz", restrictedCountryIds[0]]) {
      const r = await ctx.app.inject({ method: "GET", url: `/v1/public/countries/${id}` });
      assert.equal(r.statusCode, 404, id);
    }
  });

  test("signed GET /v1/partner/asset-pairs: every seeded pair, decimals at scale 8 as strings", async () => {
    const res = await ctx.signed({ method: "GET", url: "/v1/partner/asset-pairs" });
    assert.equal(res.statusCode, 200);
    const items = res.json().items as Record<string, unknown>[];
    assert.deepEqual(items.map((p) => p.id).sort(), seedPairs.map((p) => `${p.base}-${p.quote}`).sort());
    assert.deepEqual(
      items.find((p) => p.id === "BTC-AED"),
      {
        id: "BTC-AED",
        base_id: "BTC",
        quote_id: "AED",
        buy: "349250.00000000",
        sell: "348550.00000000",
        tradable: true,
      },
    );
  });

  test("GET /v1/partner/asset-pairs/{id}: 200 {result}; 404 when unknown or withheld from the partner", async () => {
    const res = await ctx.signed({ method: "GET", url: "/v1/partner/asset-pairs/ETH-USD" });
    assert.equal(res.statusCode, 200);
    assert.equal(res.json().result.id, "ETH-USD");
    assert.equal(res.json().result.buy, "3404.00000000");
    assert.equal(
      (await ctx.signed({ method: "GET", url: "/v1/partner/asset-pairs/ETH-EUR" })).statusCode,
      404,
    );

    const other = await ctx.addPartner();
    await ctx.services.database.db
      .insertInto("partner_pairs")
      .values({ partner_id: other.id, pair_id: "ETH-USD", available: false })
      .execute();
    const hidden = await ctx.signed({
      method: "GET",
      url: "/v1/partner/asset-pairs/ETH-USD",
      partner: other,
    });
    assert.equal(hidden.statusCode, 404);
    const list = await ctx.signed({ method: "GET", url: "/v1/partner/asset-pairs", partner: other });
    assert.equal(
      list.json().items.find((p: { id: string }) => p.id === "ETH-USD"),
      undefined,
    );
    // The first partner still sees it.
    assert.equal(
      (await ctx.signed({ method: "GET", url: "/v1/partner/asset-pairs/ETH-USD" })).statusCode,
      200,
    );
  });

  test("asset-pair routes need a signature", async () => {
    assert.equal(
      (await ctx.app.inject({ method: "GET", url: "/v1/partner/asset-pairs/BTC-AED" })).statusCode,
      401,
    );
  });
});
