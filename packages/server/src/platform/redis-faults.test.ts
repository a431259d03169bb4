// Redis going away under traffic (docs/operations.md, "Redis"): the test's own redis-server is
// killed while signed requests run. Nothing answers 5xx and nothing crashes; the replay guard goes
// to the database (a replay is still refused), the rate limits let requests through, counted in
// counterpart_rate_limit_fail_open_total; when Redis is back, both use it again, and a request the
// database recorded during the outage is still refused as a replay.

import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { signRequest } from "@counterpart/protocol";
import { insertClient } from "../testing/fixtures.ts";
import { startTestContext, type TestContext } from "../testing/harness.ts";
import { startTestRedis, type TestRedis } from "../testing/redis-server.ts";

describe("Redis going away", () => {
  let redis: TestRedis;
  let ctx: TestContext;
  let refN = 0;
  before(async () => {
    redis = await startTestRedis();
    ctx = await startTestContext({ env: { REDIS_URL: redis.url, REDIS_TIMEOUT_MS: "2000" } });
    await insertClient(ctx.services.database.db, ctx.partner.id, 1);
  });
  after(async () => {
    await ctx?.close();
    await redis?.stop();
  });

  /** A signed deposit, and the same bytes sent again (a replay). */
  async function depositAndReplay() {
    ctx.clock.advance(1);
    const body = JSON.stringify({
      partner_client_id: "client-1",
      asset_id: "AED",
      amount: "1",
      partner_order_ref: `rf-${++refN}`,
    });
    const headers = {
      "content-type": "application/json",
      ...signRequest({
        partnerId: ctx.partner.id,
        privateKey: ctx.partner.privateKeyPem,
        method: "POST",
        target: "/v1/partner/deposits",
        body,
        nowMs: ctx.clock.nowMs(),
      }),
    };
    const send = () =>
      ctx.app.inject({
        method: "POST",
        url: "/v1/partner/deposits",
        headers,
        payload: body,
        remoteAddress: "127.0.0.1",
      });
    return { send };
  }
  const recordedInDatabase = async () =>
    Number(
      (
        await ctx.services.database.db
          .selectFrom("used_signatures")
          .select((eb) => eb.fn.countAll().as("n"))
          .executeTakeFirstOrThrow()
      ).n,
    );
  const read = () => ctx.signed({ method: "GET", url: "/v1/partner/asset-pairs" });
  const failOpen = async () =>
    (await ctx.services.rateLimiter!.failOpen.get()).values.reduce((a, v) => a + v.value, 0);

  test("with Redis: replays are refused through Redis, the database records nothing", async () => {
    const first = await depositAndReplay();
    assert.equal((await first.send()).statusCode, 200);
    assert.equal((await first.send()).statusCode, 401);
    assert.equal(await recordedInDatabase(), 0);
  });

  test("killed mid-traffic: no 5xx, replays still refused (database), limits fail open and are counted", async () => {
    const res = await ctx.adminRequest("PUT", `/admin/partners/${ctx.partner.id}/limits`, { reads: 2 });
    assert.equal(res.statusCode, 200);
    ctx.clock.advance(60_000);
    const traffic: Promise<{ statusCode: number }>[] = [];
    for (let i = 0; i < 10; i++) traffic.push((await depositAndReplay()).send(), read());
    const killed = redis.kill();
    for (let i = 0; i < 10; i++) traffic.push((await depositAndReplay()).send(), read());
    await killed;
    const codes = (await Promise.all(traffic)).map((r) => r.statusCode);
    assert.deepEqual(
      codes.filter((c) => c >= 500),
      [],
      codes.join(","),
    );
    // Every deposit went through (each has its own reference); reads beyond the budget of 2 may
    // be 429 only while Redis still answered.
    assert.ok(codes.every((c) => c === 200 || c === 429));

    const failOpenBefore = await failOpen();
    const answers = [await read(), await read(), await read(), await read()];
    assert.deepEqual(
      answers.map((r) => r.statusCode),
      [200, 200, 200, 200],
      "over the budget of 2, yet let through: nothing to count with",
    );
    assert.equal(answers[0]!.headers["ratelimit-limit"], undefined, "no budget was consulted");
    assert.equal((await failOpen()) - failOpenBefore, 4);

    const during = await depositAndReplay();
    const inDatabase = await recordedInDatabase();
    assert.equal((await during.send()).statusCode, 200);
    assert.equal(await recordedInDatabase(), inDatabase + 1, "recorded in the database");
    assert.equal((await during.send()).statusCode, 401, "a replay is still refused");

    // Back: Redis is used again for both; the request recorded during the outage stays refused.
    await redis.restart();
    assert.equal(await ctx.services.sharedState!.ready(15_000), true);
    ctx.clock.advance(1_000);
    assert.equal((await during.send()).statusCode, 401);
    ctx.clock.advance(60_000);
    const limited = [await read(), await read(), await read()];
    assert.deepEqual(
      limited.map((r) => r.statusCode),
      [200, 200, 429],
    );
    assert.equal(limited[0]!.headers["ratelimit-limit"], "2");
    const after_ = await depositAndReplay();
    const recordedBefore = await recordedInDatabase();
    assert.equal((await after_.send()).statusCode, 200);
    assert.equal((await after_.send()).statusCode, 401);
    assert.equal(await recordedInDatabase(), recordedBefore, "in Redis again, past the database's window");
  });
});
