// QUOTE_LIFETIME_S: the quote lifetime of a pair created without its own, by the admin API (and so
// the CLI) and by the catalog's seed. A pair's own lifetime wins, and a pair that exists keeps its
// lifetime. Until 27 November the setting was read and used nowhere: every new pair quoted for the
// schema's default of 15 s whatever it said.

import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { sql } from "kysely";
import { insertClient } from "../../testing/fixtures.ts";
import { startTestContext, type TestContext } from "../../testing/harness.ts";
import { englishCountryName, seedCatalog } from "../catalog/index.ts";

describe("QUOTE_LIFETIME_S, the lifetime of a new pair's quotes", () => {
  let ctx: TestContext;
  before(async () => {
    ctx = await startTestContext({ env: { QUOTE_LIFETIME_S: "40" } });
  });
  after(() => ctx.close());

  const lifetimeOf = async (pairId: string) =>
    (
      await sql<{ lifetime_s: number }>`SELECT lifetime_s FROM asset_pairs WHERE id = ${pairId}`.execute(
        ctx.services.database.db,
      )
    ).rows[0]?.lifetime_s;

  test("a pair the admin API creates without a lifetime quotes for QUOTE_LIFETIME_S; its own lifetime wins", async () => {
    const created = await ctx.adminRequest("PUT", "/admin/pairs/ETH-SAR", {
      tradable: true,
      min_volume: "0.01",
    });
    assert.equal(created.statusCode, 200, created.body);
    assert.equal(created.json().result.lifetime_s, 40);
    assert.equal(await lifetimeOf("ETH-SAR"), 40);
    // And its quotes say so.
    const priced = await ctx.adminRequest("PUT", "/admin/pairs/ETH-SAR/price", {
      buy: "12000",
      sell: "11900",
      reason: "test set-up",
    });
    assert.equal(priced.statusCode, 200, priced.body);
    await insertClient(ctx.services.database.db, ctx.partner.id, 1);
    const funded = await ctx.signed({
      method: "POST",
      url: "/v1/partner/deposits",
      body: {
        partner_client_id: "client-1",
        asset_id: "SAR",
        amount: "1000",
        partner_order_ref: "lifetime-1",
      },
    });
    assert.equal(funded.statusCode, 200, funded.body);
    const quoted = await ctx.signed({
      method: "POST",
      url: "/v1/partner/quotes",
      body: { partner_client_id: "client-1", asset_pair: "ETH-SAR", side: "buy", base_amount: "0.01" },
    });
    assert.equal(quoted.statusCode, 200, quoted.body);
    assert.equal(quoted.json().result.lifetime, 40);

    const own = await ctx.adminRequest("PUT", "/admin/pairs/SOL-SAR", { lifetime_s: 25 });
    assert.equal(own.statusCode, 200, own.body);
    assert.equal(own.json().result.lifetime_s, 25);

    // A change that does not name the lifetime leaves it as it is.
    const changed = await ctx.adminRequest("PUT", "/admin/pairs/SOL-SAR", { min_volume: "0.02" });
    assert.equal(changed.statusCode, 200, changed.body);
    assert.equal(await lifetimeOf("SOL-SAR"), 25);
    // The seeded pairs, which existed before the setting was given, keep theirs.
    assert.equal(await lifetimeOf("BTC-AED"), 15);
  });

  test("the seed gives the pairs it adds QUOTE_LIFETIME_S and leaves the pairs that exist alone", async () => {
    const db = ctx.services.database.db;
    await sql`DELETE FROM asset_pairs WHERE id = 'SOL-USD'`.execute(db);
    await seedCatalog(db, englishCountryName, { quoteLifetimeSeconds: 30 });
    assert.equal(await lifetimeOf("SOL-USD"), 30);
    assert.equal(await lifetimeOf("BTC-AED"), 15);
  });
});
