// Housekeeping (main.ts, housekeepingJob): at each tick its leader rolls the orders' days up
// (OrdersService.rollDays) besides its purges; a roll-up failing is logged and tried again at
// the next tick.

import assert from "node:assert/strict";
import { Writable } from "node:stream";
import { after, before, describe, mock, test } from "node:test";
import { sql } from "kysely";
import { housekeepingJob } from "./main.ts";
import type { RollResult } from "./modules/orders/index.ts";
import { createLogger } from "./platform/logger.ts";
import type { Services } from "./services.ts";
import { insertClient } from "./testing/fixtures.ts";
import { startTestContext, type TestContext } from "./testing/harness.ts";

/** A logger at info whose lines are kept, to be read by the test. */
function loggedLines() {
  const lines: string[] = [];
  const logger = createLogger(
    "info",
    new Writable({
      write(chunk, _encoding, done) {
        lines.push(String(chunk));
        done();
      },
    }),
  );
  return { lines, logger };
}

describe("housekeeping: the orders' days", () => {
  let ctx: TestContext;
  const { lines, logger } = loggedLines();

  before(async () => {
    ctx = await startTestContext();
    const db = ctx.services.database.db;
    const client = await insertClient(db, ctx.partner.id, 1);
    // Two orders of past days, written by hand.
    await sql`INSERT INTO orders (partner_id, client_id, partner_order_ref, type, source, status, debit,
                debit_asset_id, fee_asset_id, created_at)
              VALUES (${ctx.partner.id}, ${client.id}, 'h-1', 'deposit', 'bank', 'completed', 1, 'AED', 'AED',
                        '2026-03-01T10:00:00Z'),
                     (${ctx.partner.id}, ${client.id}, 'h-2', 'deposit', 'bank', 'completed', 1, 'AED', 'AED',
                        '2026-03-04T10:00:00Z')`.execute(db);
  });
  after(async () => {
    mock.timers.reset();
    await ctx.close();
  });

  const rolled = () =>
    ctx.services.database.db
      .selectFrom("order_day_counts")
      .where("partner_id", "=", ctx.partner.id)
      .select(["day", "orders"])
      .orderBy("day")
      .execute();

  test("a tick rolls the days up, nothing before it", async () => {
    mock.timers.enable({ apis: ["setInterval"] });
    const job = housekeepingJob(ctx.services, logger);
    job.start();
    try {
      assert.deepEqual(await rolled(), []);
      mock.timers.tick(60_000);
      // The roll-up runs in the background: waited for, 5 s at most.
      for (let i = 0; i < 100 && (await rolled()).length === 0; i++)
        await new Promise((resolve) => setTimeout(resolve, 50));
    } finally {
      await job.stop();
    }
    assert.deepEqual(await rolled(), [
      { day: "2026-03-01", orders: 1 },
      { day: "2026-03-04", orders: 1 },
    ]);
    assert.ok(
      lines.some((l) => l.includes("rolled the orders' days up") && l.includes('"days":2')),
      lines.join(""),
    );
  });
});

describe("housekeeping: a roll-up held back by sessions it cannot see", () => {
  test("is logged as a warning once, and its end once", async () => {
    const { lines, logger } = loggedLines();
    // The orders' service as the roll-up finds the database: two ticks with a session it cannot
    // see (order-days-store.ts, transactionsBegun), then one without.
    const runs: RollResult[] = [
      { days: 0, done: false, until: null, unseen: 2 },
      { days: 0, done: false, until: null, unseen: 1 },
      { days: 0, done: true, until: "2026-03-05", unseen: 0 },
    ];
    let calls = 0;
    const orders = { rollDays: async () => runs[Math.min(calls++, runs.length - 1)] as RollResult };
    const ctx = await startTestContext();
    mock.timers.enable({ apis: ["setInterval"] });
    const job = housekeepingJob({ ...ctx.services, orders } as unknown as Services, logger);
    const held = () => lines.filter((l) => l.includes("not rolled up while sessions of another role"));
    const again = () => lines.filter((l) => l.includes("rolled up again"));
    try {
      job.start();
      for (const expected of [1, 2, 3]) {
        mock.timers.tick(60_000);
        for (let i = 0; i < 100 && calls < expected; i++)
          await new Promise((resolve) => setTimeout(resolve, 10));
        await new Promise((resolve) => setImmediate(resolve));
        assert.equal(calls, expected);
        if (expected < 3) {
          assert.equal(held().length, 1, lines.join(""));
          assert.equal(again().length, 0);
        }
      }
    } finally {
      await job.stop();
      mock.timers.reset();
      await ctx.close();
    }
    assert.equal(held().length, 1, lines.join(""));
    assert.match(held()[0] as string, /"level":40/);
    assert.match(held()[0] as string, /"sessions":2/);
    assert.match(held()[0] as string, /pg_read_all_stats/);
    assert.equal(again().length, 1, lines.join(""));
  });
});
