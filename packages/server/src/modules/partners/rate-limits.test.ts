// Rate limits per partner (docs/decisions.md, "Rate limits"), run twice: with the budgets in this
// process, and in a redis-server the test starts (REDIS_URL). The headers of every authenticated
// answer, the 429 and its Retry-After, separate budgets per class and per partner, the operator's
// budgets taking effect at once, nothing drawn before authentication, nothing applied by a 429,
// exactness under concurrency, and the GCRA arithmetic itself.

import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { insertClient } from "../../testing/fixtures.ts";
import { startTestContext, type TestContext, type TestPartner } from "../../testing/harness.ts";
import { startTestRedis, type TestRedis } from "../../testing/redis-server.ts";
import { defaultRateLimits, gcra } from "./rate-limits.ts";

describe("GCRA arithmetic", () => {
  test("a budget of N lets N through at once, refills one per interval, and says when", () => {
    let tat = 0;
    const now = 1_000_000_000;
    for (let i = 1; i <= 3; i++) {
      const step = gcra(tat, now, 3, 60_000);
      assert.equal(step.decision.allowed, true);
      assert.equal(step.decision.remaining, 3 - i);
      assert.equal(step.decision.resetSeconds, 20 * i);
      tat = step.tatUs;
    }
    const refused = gcra(tat, now, 3, 60_000);
    assert.deepEqual(refused.decision, {
      allowed: false,
      limit: 3,
      remaining: 0,
      resetSeconds: 60,
      retryAfterSeconds: 20,
    });
    assert.equal(refused.tatUs, tat, "a refusal stores nothing");
    assert.equal(gcra(tat, now + 19_999_999, 3, 60_000).decision.allowed, false);
    const later = gcra(tat, now + 20_000_000, 3, 60_000);
    assert.equal(later.decision.allowed, true);
    assert.equal(later.decision.remaining, 0);
  });

  test("a clock stepped back by more than a window starts the bucket afresh instead of refusing for the step", () => {
    let tat = 0;
    const now = 1_000_000_000_000;
    for (let i = 0; i < 3; i++) tat = gcra(tat, now, 3, 60_000).tatUs;
    assert.equal(gcra(tat, now, 3, 60_000).decision.allowed, false);
    // A step back within one window (clocks of processes a little apart) is still the same budget.
    assert.equal(gcra(tat, now - 1_000_000, 3, 60_000).decision.allowed, false);
    assert.equal(gcra(tat, now - 59_000_000, 3, 60_000).decision.allowed, false);
    // A year back: the stored TAT is further ahead than any clock could have stored it.
    const back = gcra(tat, now - 365 * 86_400_000_000, 3, 60_000);
    assert.equal(back.decision.allowed, true);
    assert.equal(back.decision.remaining, 2);
  });

  test("budgets that do not divide the window are exact at N and refuse N + 1", () => {
    for (const limit of [7, 13, 1_199, 1_000_003]) {
      let tat = 0;
      const now = 1_764_000_000_000_000;
      for (let i = 0; i < limit; i++) {
        const step = gcra(tat, now, limit, 60_000);
        if (!step.decision.allowed) assert.fail(`limit ${limit}: request ${i + 1} refused`);
        tat = step.tatUs;
      }
      assert.equal(gcra(tat, now, limit, 60_000).decision.allowed, false, `limit ${limit}`);
    }
  });
});

for (const mode of ["in-process", "redis"] as const) {
  describe(`rate limits (${mode})`, () => {
    let redis: TestRedis | null = null;
    let ctx: TestContext;
    let other: TestPartner;
    let refN = 0;
    before(async () => {
      if (mode === "redis") redis = await startTestRedis();
      // A generous bound on Redis calls: this suite is about the budgets, not about a slow machine
      // (redis-faults.test.ts is about Redis failing).
      ctx = await startTestContext({
        env: redis === null ? {} : { REDIS_URL: redis.url, REDIS_TIMEOUT_MS: "5000" },
      });
      other = await ctx.addPartner({ name: "Partner B" });
      await insertClient(ctx.services.database.db, ctx.partner.id, 1);
    });
    after(async () => {
      await ctx?.close();
      await redis?.stop();
    });

    const setLimits = async (partnerId: string, body: Record<string, number | null>) => {
      const res = await ctx.adminRequest("PUT", `/admin/partners/${partnerId}/limits`, body);
      assert.equal(res.statusCode, 200, res.body);
      return res.json().result;
    };
    const read = (partner?: TestPartner) =>
      ctx.signed({ method: "GET", url: "/v1/partner/asset-pairs", ...(partner ? { partner } : {}) });
    const deposit = () =>
      ctx.signed({
        method: "POST",
        url: "/v1/partner/deposits",
        body: {
          partner_client_id: "client-1",
          asset_id: "AED",
          amount: "1",
          partner_order_ref: `rl-${++refN}`,
        },
      });
    const orderCount = async () =>
      Number(
        (
          await ctx.services.database.db
            .selectFrom("orders")
            .select((eb) => eb.fn.countAll().as("n"))
            .where("partner_id", "=", ctx.partner.id)
            .executeTakeFirstOrThrow()
        ).n,
      );

    test("every authenticated answer carries the budget; a refused signature carries none", async () => {
      const ok = await read();
      assert.equal(ok.statusCode, 200);
      assert.equal(ok.headers["ratelimit-limit"], String(defaultRateLimits.reads));
      assert.match(String(ok.headers["ratelimit-remaining"]), /^[0-9]+$/);
      assert.match(String(ok.headers["ratelimit-reset"]), /^[0-9]+$/);
      const notFound = await ctx.signed({ method: "GET", url: "/v1/partner/nothing-here" });
      assert.equal(notFound.statusCode, 404);
      assert.equal(notFound.headers["ratelimit-limit"], String(defaultRateLimits.reads));
      const invalid = await ctx.signed({ method: "GET", url: "/v1/partner/balances" });
      assert.equal(invalid.statusCode, 422);
      assert.equal(invalid.headers["ratelimit-limit"], String(defaultRateLimits.reads));
      const refused = await ctx.signed({
        method: "GET",
        url: "/v1/partner/asset-pairs",
        headers: { "x-signature": Buffer.alloc(64).toString("base64") },
      });
      assert.equal(refused.statusCode, 401);
      assert.equal(refused.headers["ratelimit-limit"], undefined);
      const publicRead = await ctx.app.inject({ method: "GET", url: "/v1/public/assets" });
      assert.equal(publicRead.headers["ratelimit-limit"], undefined);
    });

    test("over the budget: 429 in the contract's shape with Retry-After; other budgets and partners go on", async () => {
      const view = await setLimits(ctx.partner.id, { reads: 3 });
      assert.deepEqual(view.rate_limits.reads, { per_minute: 3, default: false });
      assert.equal(view.rate_limits.writes.default, true);
      ctx.clock.advance(60_000);
      const answers = [await read(), await read(), await read()];
      assert.deepEqual(
        answers.map((r) => [r.statusCode, r.headers["ratelimit-remaining"]]),
        [
          [200, "2"],
          [200, "1"],
          [200, "0"],
        ],
      );
      const over = await read();
      assert.equal(over.statusCode, 429);
      assert.deepEqual(over.json(), { code: 429, msg: "Too Many Requests", msg_detail: null });
      assert.equal(over.headers["retry-after"], "20");
      assert.equal(over.headers["ratelimit-limit"], "3");
      assert.equal(over.headers["ratelimit-remaining"], "0");
      // Writes have a budget of their own, and so has every other partner.
      assert.equal((await deposit()).statusCode, 200);
      const theirs = await read(other);
      assert.equal(theirs.statusCode, 200);
      assert.equal(theirs.headers["ratelimit-limit"], String(defaultRateLimits.reads));
      // A refused signature draws nothing: the budget refills as if it had not been sent.
      ctx.clock.advance(19_990);
      assert.equal((await read()).statusCode, 429);
      ctx.clock.advance(10);
      const unsigned = await ctx.app.inject({ method: "GET", url: "/v1/partner/asset-pairs" });
      assert.equal(unsigned.statusCode, 401);
      const again = await read();
      assert.equal(again.statusCode, 200);
      assert.equal(again.headers["ratelimit-remaining"], "0");
      await setLimits(ctx.partner.id, { reads: null });
      const restored = await read();
      assert.equal(restored.statusCode, 200);
      assert.equal(restored.headers["ratelimit-limit"], String(defaultRateLimits.reads));
    });

    test("a write over its budget applies nothing; quotes have their own budget", async () => {
      ctx.clock.advance(60_000);
      await setLimits(ctx.partner.id, { writes: 1, quotes: 2 });
      const orders = await orderCount();
      assert.equal((await deposit()).statusCode, 200);
      const refused = await deposit();
      assert.equal(refused.statusCode, 429);
      assert.equal(refused.json().code, 429);
      assert.equal(await orderCount(), orders + 1, "the refused deposit created no order");
      const quote = () =>
        ctx.signed({
          method: "POST",
          url: "/v1/partner/quotes",
          body: { partner_client_id: "client-1", asset_pair: "BTC-AED", side: "buy", base_amount: "0.001" },
        });
      const first = await quote();
      assert.notEqual(first.statusCode, 429);
      assert.equal(first.headers["ratelimit-limit"], "2");
      assert.notEqual((await quote()).statusCode, 429);
      assert.equal((await quote()).statusCode, 429);
      await setLimits(ctx.partner.id, { writes: null, quotes: null });
    });

    test("exact under concurrency: a budget of 5 lets exactly 5 of 40 simultaneous requests through", async () => {
      ctx.clock.advance(60_000);
      await setLimits(other.id, { reads: 5 });
      const answers = await Promise.all(Array.from({ length: 40 }, () => read(other)));
      const codes = answers.map((r) => r.statusCode);
      assert.equal(codes.filter((c) => c === 200).length, 5, codes.join(","));
      assert.equal(codes.filter((c) => c === 429).length, 35);
      // The flood was the other partner's: this one's reads are untouched.
      assert.equal((await read()).statusCode, 200);
      await setLimits(other.id, { reads: null });
    });

    test("the operator's budgets are checked: bounds and unknown fields are a 422, an unknown partner 404", async () => {
      const zero = await ctx.adminRequest("PUT", `/admin/partners/${ctx.partner.id}/limits`, { reads: 0 });
      assert.equal(zero.statusCode, 422);
      const extra = await ctx.adminRequest("PUT", `/admin/partners/${ctx.partner.id}/limits`, { bursts: 3 });
      assert.equal(extra.statusCode, 422);
      const text = await ctx.adminRequest("PUT", `/admin/partners/${ctx.partner.id}/limits`, { reads: "9" });
      assert.equal(text.statusCode, 422);
      const shown = await ctx.adminRequest("GET", `/admin/partners/${ctx.partner.id}`);
      assert.equal(shown.json().result.rate_limits.reads.default, true, "nothing changed");
      const unknown = await ctx.adminRequest(
        "PUT",
        "/admin/partners/00000000-0000-4000-8000-000000000000/limits",
        { reads: 5 },
      );
      assert.equal(unknown.statusCode, 404);
    });
  });
}
