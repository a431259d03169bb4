// The simulated feed: a bounded random walk per pair, reproducible from its seed, that leaves
// pairs pinned by the operator alone and stamps each tick with the clock's time.

import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import type { DatabaseHandle } from "../../db/database.ts";
import { moneyFromPg } from "../../db/numeric.ts";
import { ManualClock } from "../../platform/clock.ts";
import { seededRandom } from "../../platform/random.ts";
import { openTestDatabase } from "../../testing/harness.ts";
import { SimulatedPriceFeed } from "./price-feed.ts";

async function prices(database: DatabaseHandle) {
  const rows = await database.db
    .selectFrom("asset_pairs")
    .select(["id", "buy", "sell", "price_at"])
    .orderBy("id")
    .execute();
  return rows;
}

describe("simulated price feed", () => {
  let a: DatabaseHandle;
  let b: DatabaseHandle;
  before(async () => {
    [a, b] = await Promise.all([openTestDatabase(), openTestDatabase()]);
  });
  after(async () => {
    await Promise.all([a.close(), b.close()]);
  });

  test("the generator is reproducible from its seed", () => {
    const x = seededRandom(42);
    const y = seededRandom(42);
    const z = seededRandom(43);
    const xs = Array.from({ length: 5 }, x);
    assert.deepEqual(xs, Array.from({ length: 5 }, y));
    assert.notDeepEqual(xs, Array.from({ length: 5 }, z));
    for (const v of xs) assert.ok(v >= 0 && v < 1);
  });

  test("two feeds with one seed walk identically; prices stay within ±20% and keep buy >= sell", async () => {
    const clock = new ManualClock();
    const start = new Map(
      (await prices(a)).map((p) => [p.id, (moneyFromPg(p.buy) + moneyFromPg(p.sell)) / 2n]),
    );
    const fa = new SimulatedPriceFeed(a.db, clock, { seed: 7 });
    const fb = new SimulatedPriceFeed(b.db, clock, { seed: 7 });
    for (let i = 0; i < 100; i++) {
      await fa.tick();
      await fb.tick();
    }
    const pa = await prices(a);
    assert.deepEqual(pa, await prices(b));
    let moved = 0;
    for (const p of pa) {
      const buy = moneyFromPg(p.buy);
      const sell = moneyFromPg(p.sell);
      const mid = (buy + sell) / 2n;
      const anchor = start.get(p.id)!;
      assert.ok(buy >= sell && sell > 0n, p.id);
      assert.ok(mid * 100n >= anchor * 79n && mid * 100n <= anchor * 121n, `${p.id} stays within the band`);
      if (mid !== anchor) moved++;
      assert.equal(p.price_at, "2026-11-21T09:30:00.000000Z");
    }
    assert.ok(moved > 0, "prices move");
  });

  test("a pinned pair is left alone", async () => {
    await a.db
      .updateTable("asset_pairs")
      .set({ price_pinned: true, buy: "100", sell: "99" })
      .where("id", "=", "BTC-USD")
      .execute();
    const clock = new ManualClock(Date.UTC(2026, 10, 22));
    const feed = new SimulatedPriceFeed(a.db, clock, { seed: 9 });
    await feed.tick();
    const rows = await prices(a);
    const pinned = rows.find((p) => p.id === "BTC-USD")!;
    assert.equal(pinned.buy, "100.00000000");
    assert.notEqual(pinned.price_at, "2026-11-22T00:00:00.000000Z");
    assert.ok(
      rows.filter((p) => p.id !== "BTC-USD").every((p) => p.price_at === "2026-11-22T00:00:00.000000Z"),
    );
  });

  test("the feed's last tick is what it wrote, and when; none for a pair it has not priced", async () => {
    const database = await openTestDatabase();
    try {
      await database.db
        .updateTable("asset_pairs")
        .set({ price_pinned: true })
        .where("id", "=", "ETH-USD")
        .execute();
      const clock = new ManualClock(Date.UTC(2026, 10, 23, 8));
      const feed = new SimulatedPriceFeed(database.db, clock, { seed: 11 });
      assert.equal(feed.lastTick("BTC-USD"), null);
      await feed.tick();
      const row = (await prices(database)).find((p) => p.id === "BTC-USD")!;
      assert.deepEqual(feed.lastTick("BTC-USD"), {
        buy: moneyFromPg(row.buy),
        sell: moneyFromPg(row.sell),
        atMs: clock.nowMs(),
      });
      // Pinned: the feed left it alone, so it has no tick for it.
      assert.equal(feed.lastTick("ETH-USD"), null);
      clock.advance(5_000);
      const resumed = await feed.resume("ETH-USD");
      assert.ok(resumed !== undefined);
      assert.deepEqual(feed.lastTick("ETH-USD"), {
        buy: moneyFromPg(resumed.buy),
        sell: moneyFromPg(resumed.sell),
        atMs: clock.nowMs(),
      });
    } finally {
      await database.close();
    }
  });
});
