// `price resume` (POST /admin/pairs/{id}/resume): the pair is handed back to the feed with the
// feed's current price, stamped now, in the same statement, so a quote right after it is priced
// (no 4001 until the next tick); with PRICE_FEED=manual there is no feed, and resume is refused
// with nothing changed (docs/decisions.md, "Prices"). The clock is the injected ManualClock: the
// test never sleeps, and the feed never ticks by itself (it is not started).

import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { isoFromMs } from "../../db/time.ts";
import { insertClient } from "../../testing/fixtures.ts";
import { startTestContext, type TestContext } from "../../testing/harness.ts";
import { SimulatedPriceFeed } from "./price-feed.ts";

const anHourAgo = (ctx: TestContext) => new Date(ctx.clock.nowMs() - 3_600_000).toISOString();

async function setUp(ctx: TestContext): Promise<void> {
  await insertClient(ctx.services.database.db, ctx.partner.id, 1);
  const res = await ctx.signed({
    method: "POST",
    url: "/v1/partner/deposits",
    body: { partner_client_id: "client-1", asset_id: "AED", amount: "1000000", partner_order_ref: "fund" },
  });
  assert.equal(res.statusCode, 200, res.body);
}

const quote = (ctx: TestContext) =>
  ctx.signed({
    method: "POST",
    url: "/v1/partner/quotes",
    body: { partner_client_id: "client-1", asset_pair: "BTC-AED", side: "buy", base_amount: "0.01" },
  });

async function pinAnHourAgo(ctx: TestContext, buy: string, sell: string) {
  const res = await ctx.adminRequest("PUT", "/admin/pairs/BTC-AED/price", {
    buy,
    sell,
    at: anHourAgo(ctx),
    reason: "test set-up",
  });
  assert.equal(res.statusCode, 200, res.body);
  const stale = await quote(ctx);
  assert.equal(stale.json().code, 4001, "the pinned tick is an hour old");
  return res.json().result;
}

async function pairRow(ctx: TestContext) {
  return ctx.services.database.db
    .selectFrom("asset_pairs")
    .selectAll()
    .where("id", "=", "BTC-AED")
    .executeTakeFirstOrThrow();
}

/** |a − b| ≤ b × ppm / 1e6, on NUMERIC text at scale 8. */
function near(a: string, b: string, ppm: bigint): boolean {
  const x = BigInt(a.replace(".", ""));
  const y = BigInt(b.replace(".", ""));
  const d = x > y ? x - y : y - x;
  return d * 1_000_000n <= y * ppm;
}

describe("price resume with the simulated feed", () => {
  let ctx: TestContext;
  before(async () => {
    ctx = await startTestContext({ env: { PRICE_FEED: "simulated" } });
    await setUp(ctx);
  });
  after(async () => {
    await ctx.close();
  });

  test("a pair pinned an hour ago is quoted right after resume: a fresh tick, stamped now", async () => {
    await pinAnHourAgo(ctx, "350000", "349000");
    const res = await ctx.adminRequest("POST", "/admin/pairs/BTC-AED/resume");
    assert.equal(res.statusCode, 200, res.body);
    const pair = res.json().result;
    assert.equal(pair.price_pinned, false);
    // Stamped with the clock's instant (the ManualClock does not move for admin requests).
    assert.equal(new Date(pair.price_at).getTime(), ctx.clock.nowMs());
    const stored = await pairRow(ctx);
    assert.equal(stored.price_at, isoFromMs(ctx.clock.nowMs()));
    assert.equal(stored.price_pinned, false);
    // The feed had never priced the pair: its walk starts at the pair's prices, one step (≤ 0.1%).
    assert.ok(near(pair.buy, "350000.00000000", 1_000n), pair.buy);
    assert.ok(BigInt(pair.buy.replace(".", "")) >= BigInt(pair.sell.replace(".", "")));

    // The very next request (1 ms later on the injected clock) is priced by it.
    const q = await quote(ctx);
    assert.equal(q.statusCode, 200, q.body);
    assert.equal(q.json().result.market_price, pair.buy);
  });

  test("the price is the feed's, not the operator's old one re-stamped", async () => {
    const feed = ctx.services.priceFeed;
    assert.ok(feed instanceof SimulatedPriceFeed);
    for (let i = 0; i < 3; i++) await feed.tick();
    const market = await pairRow(ctx);
    // The operator pins a price far from the market, an hour old; resume goes back to the market.
    await pinAnHourAgo(ctx, "100", "99");
    const res = await ctx.adminRequest("POST", "/admin/pairs/BTC-AED/resume");
    assert.equal(res.statusCode, 200, res.body);
    const pair = res.json().result;
    assert.ok(near(pair.buy, market.buy, 1_000n), `${pair.buy} is one step from ${market.buy}`);
    assert.ok(near(pair.sell, market.sell, 1_000n), `${pair.sell} is one step from ${market.sell}`);
    assert.equal((await quote(ctx)).json().result.market_price, pair.buy);
    // And the feed goes on moving it.
    ctx.clock.advance(1_000);
    await feed.tick();
    assert.equal((await pairRow(ctx)).price_at, isoFromMs(ctx.clock.nowMs()));
  });

  test("an unknown pair is a 404 and changes nothing", async () => {
    const before_ = await ctx.services.database.db
      .selectFrom("asset_pairs")
      .selectAll()
      .orderBy("id")
      .execute();
    const res = await ctx.adminRequest("POST", "/admin/pairs/NOPE-AED/resume");
    assert.equal(res.statusCode, 404);
    assert.deepEqual(res.json(), { code: 404, msg: "Not Found", msg_detail: null });
    assert.deepEqual(
      await ctx.services.database.db.selectFrom("asset_pairs").selectAll().orderBy("id").execute(),
      before_,
    );
  });
});

describe("price resume with PRICE_FEED=manual", () => {
  let ctx: TestContext;
  before(async () => {
    ctx = await startTestContext({ env: { PRICE_FEED: "manual" } });
    await setUp(ctx);
  });
  after(async () => {
    await ctx.close();
  });

  test("there is no feed to hand the pair back to: a 422, the pair still pinned at its old tick", async () => {
    assert.equal(ctx.services.priceFeed, null);
    await pinAnHourAgo(ctx, "350000", "349000");
    const pinned = await pairRow(ctx);
    const res = await ctx.adminRequest("POST", "/admin/pairs/BTC-AED/resume");
    assert.equal(res.statusCode, 422);
    assert.deepEqual(res.json(), {
      code: 422,
      msg: "Validation Error",
      msg_detail: [
        {
          loc: ["body"],
          msg: "No price feed runs (PRICE_FEED=manual): there is no feed to hand the pair back to; set its prices by hand instead",
          type: "value_error",
        },
      ],
    });
    assert.deepEqual(await pairRow(ctx), pinned);
    assert.equal((await quote(ctx)).json().code, 4001, "still stale: nothing re-stamped the old price");
    // A pair that does not exist is a 404 here too.
    assert.equal((await ctx.adminRequest("POST", "/admin/pairs/NOPE-AED/resume")).statusCode, 404);
    // Times RFC 3339 takes that are no instant the service holds are a 422 in our words, and pin
    // nothing: a leap second (no Date holds it), year 0000 (PostgreSQL has none), and instants past
    // year 9999 in UTC (JavaScript writes them as +010000, which PostgreSQL refuses). Each was a 500.
    for (const at of [
      "2026-06-30T23:59:60Z",
      "2026-07-01T03:59:60+04:00",
      "0000-01-01T00:00:00Z",
      "0001-01-01T00:00:00+00:01",
      "9999-12-31T23:59:59-00:01",
      "9999-12-31T23:59:59-23:59",
    ]) {
      const refused = await ctx.adminRequest("PUT", "/admin/pairs/BTC-AED/price", {
        buy: "350000",
        sell: "349000",
        at,
        reason: "test set-up",
      });
      assert.equal(refused.statusCode, 422, `${at}: ${refused.body}`);
      assert.deepEqual(refused.json().msg_detail, [
        { loc: ["body", "at"], msg: "Input should be a valid datetime", type: "datetime_from_date_parsing" },
      ]);
      assert.deepEqual(await pairRow(ctx), pinned);
    }
    // The first instant it names is taken, as that instant (the last, in year 9999, is in the
    // future: the next test).
    const first = await ctx.adminRequest("PUT", "/admin/pairs/BTC-AED/price", {
      buy: "350000",
      sell: "349000",
      at: "0001-01-01T00:00:00+00:00",
      reason: "test set-up",
    });
    assert.equal(first.statusCode, 200, first.body);
    assert.equal(first.json().result.price_at, "0001-01-01T00:00:00.000000Z");
    // Setting the price by hand is the way to trade again.
    const set = await ctx.adminRequest("PUT", "/admin/pairs/BTC-AED/price", {
      buy: "350000",
      sell: "349000",
      reason: "test set-up",
    });
    assert.equal(set.statusCode, 200);
    assert.equal((await quote(ctx)).statusCode, 200);
  });

  test("a price stamped in the future is refused: it would stay fresh past its time", async () => {
    const db = ctx.services.database.db;
    const audits = async () =>
      Number(
        (
          await db
            .selectFrom("audit_log")
            .select((eb) => eb.fn.countAll().as("n"))
            .executeTakeFirstOrThrow()
        ).n,
      );
    const pin = (at: string) =>
      ctx.adminRequest("PUT", "/admin/pairs/BTC-AED/price", {
        buy: "351000",
        sell: "350000",
        at,
        reason: "test",
      });
    await pinAnHourAgo(ctx, "350000", "349000");
    const pinned = await pairRow(ctx);
    const audited = await audits();
    const now = ctx.clock.nowMs();
    for (const at of [
      new Date(now + 5_001).toISOString(),
      isoFromMs(now + 3_600_000).replace("Z", "+00:00"),
      "9999-12-31T20:59:59.999+03:00",
    ]) {
      const refused = await pin(at);
      assert.equal(refused.statusCode, 422, `${at}: ${refused.body}`);
      assert.deepEqual(refused.json(), {
        code: 422,
        msg: "Validation Error",
        msg_detail: [
          {
            loc: ["body", "at"],
            msg: "The prices' time should be at most 5 s past the service's clock: a price stamped later would stay fresh past its time",
            type: "value_error",
          },
        ],
      });
      assert.deepEqual(await pairRow(ctx), pinned, `${at}: nothing pinned`);
      assert.equal(await audits(), audited, `${at}: nothing audited`);
      assert.equal((await quote(ctx)).json().code, 4001, `${at}: still the hour-old tick`);
    }
    // A clock up to 5 s ahead of the service's is forgiven: the price is taken, stamped as sent.
    const ahead = await pin(new Date(now + 5_000).toISOString());
    assert.equal(ahead.statusCode, 200, ahead.body);
    assert.equal(ahead.json().result.price_at, isoFromMs(now + 5_000));
    assert.equal(await audits(), audited + 1);
    assert.equal((await quote(ctx)).statusCode, 200);
  });
});
