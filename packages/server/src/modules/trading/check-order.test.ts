// The order of checks on quotes and on execution (docs/decisions.md, "Order of checks on quotes",
// and docs/errors.md, "Order of checks"), walked as a table: each request breaks two rules at once
// and must get the earlier rule's code; the same request with the earlier fault mended gets the
// later rule's code, so both faults are real. Nothing changes on any of them.

import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { sql } from "kysely";
import { insertClient } from "../../testing/fixtures.ts";
import { startTestContext, type TestContext } from "../../testing/harness.ts";
import { moneyState } from "../../testing/money-state.ts";

interface Row {
  /** The two rules, earlier first. */
  rule: string;
  /** Breaks both rules: the earlier code is the answer. */
  both: Record<string, unknown>;
  earlier: number;
  /** The earlier fault mended: the later rule answers. */
  alone: Record<string, unknown>;
  later: number;
}

async function state(ctx: TestContext) {
  const db = ctx.services.database.db;
  const { rows } = await sql<{ n: number }>`SELECT count(*)::int8 AS n FROM quotes`.execute(db);
  return { money: await moneyState(db), quotes: Number(rows[0]?.n) };
}

describe("order of checks", () => {
  let ctx: TestContext;
  let token = "";
  before(async () => {
    ctx = await startTestContext();
    const db = ctx.services.database.db;
    await insertClient(db, ctx.partner.id, 1);
    await insertClient(db, ctx.partner.id, 2, { status: "under_review" });
    await insertClient(db, ctx.partner.id, 3, { active: false });
    await insertClient(db, ctx.partner.id, 4, { status: "under_review", active: false });
    await insertClient(db, ctx.partner.id, 5); // verified, active, holds nothing
    const other = await ctx.addPartner();
    await insertClient(db, other.id, 6); // another partner's client
    const deposit = await ctx.signed({
      method: "POST",
      url: "/v1/partner/deposits",
      body: { partner_client_id: "client-1", asset_id: "AED", amount: "100000", partner_order_ref: "taken" },
    });
    assert.equal(deposit.statusCode, 200, deposit.body);

    const admin = async (method: "PUT" | "POST", url: string, body?: unknown) => {
      const res = await ctx.adminRequest(method, url, body);
      assert.equal(res.statusCode, 200, `${url}: ${res.body}`);
    };
    const hoursAgo = new Date(ctx.clock.nowMs() - 2 * 3_600_000).toISOString();
    // BTC-AED: fresh, tradable, 0.0001 to 10.
    await admin("PUT", "/admin/pairs/BTC-AED/price", {
      buy: "350000",
      sell: "349000",
      reason: "test set-up",
    });
    // ETH-AED: not tradable and stale.
    await admin("PUT", "/admin/pairs/ETH-AED", { tradable: false });
    await admin("PUT", "/admin/pairs/ETH-AED/price", {
      buy: "12500",
      sell: "12475",
      at: hoursAgo,
      reason: "test set-up",
    });
    // SOL-AED: tradable, stale; minimum 0.01.
    await admin("PUT", "/admin/pairs/SOL-AED/price", {
      buy: "662",
      sell: "660.7",
      at: hoursAgo,
      reason: "test set-up",
    });
    // USDT-AED (USDT has 6 decimal places): fresh, not tradable.
    await admin("PUT", "/admin/pairs/USDT-AED", { tradable: false });
    await admin("PUT", "/admin/pairs/USDT-AED/price", { buy: "3.68", sell: "3.665", reason: "test set-up" });
    // USDT-USD: withheld from the partner, and not tradable either.
    await admin("PUT", "/admin/pairs/USDT-USD", { tradable: false });
    await admin("PUT", `/admin/partners/${ctx.partner.id}/pairs/USDT-USD`, { available: false });
    // USDT-EUR: a new pair, opened but never priced (its tick is the Unix epoch): stale.
    await admin("PUT", "/admin/pairs/USDT-EUR", { tradable: true });
    // SOL-USD: so cheap that selling 11 yields 0.01 USD, which the fee (rounded up) eats; max 10.
    await admin("PUT", "/admin/pairs/SOL-USD", { max_volume: "10" });
    await admin("PUT", "/admin/pairs/SOL-USD/price", { buy: "0.001", sell: "0.001", reason: "test set-up" });

    const q = await quote({});
    assert.equal(q.statusCode, 200, q.body);
    token = q.json().result.token;
  });
  after(async () => {
    await ctx.close();
  });

  const quote = (over: Record<string, unknown>) =>
    ctx.signed({
      method: "POST",
      url: "/v1/partner/quotes",
      body: {
        partner_client_id: "client-1",
        asset_pair: "BTC-AED",
        side: "buy",
        base_amount: "0.01",
        ...over,
      },
    });
  const execute = (over: Record<string, unknown>) =>
    ctx.signed({
      method: "POST",
      url: "/v1/partner/quotes/execute",
      body: { partner_client_id: "client-1", token, partner_order_ref: "fresh-ref", ...over },
    });
  const unknownToken = `qt_${"A".repeat(43)}`;

  async function walk(rows: Row[], send: (over: Record<string, unknown>) => ReturnType<typeof quote>) {
    const start = await state(ctx);
    for (const row of rows) {
      const both = await send(row.both);
      assert.equal(both.json().code, row.earlier, `${row.rule}: ${both.body}`);
      const alone = await send(row.alone);
      assert.equal(alone.json().code, row.later, `${row.rule}, the earlier fault mended: ${alone.body}`);
    }
    assert.deepEqual(await state(ctx), start, "no order, posting, balance or quote changed");
  }

  test("quotes: 422 → 2008 → 2009 → 2010 → 2013 → 422 (base asset's decimals) → 4000 → 4001 → 4004 → 4003 → 3005", async () => {
    await walk(
      [
        {
          rule: "422 (more than 8 places) before 2008",
          both: { partner_client_id: "nobody", base_amount: "1e-9" },
          earlier: 422,
          alone: { partner_client_id: "nobody" },
          later: 2008,
        },
        {
          rule: "422 (side) before 2008",
          both: { partner_client_id: "client-6", side: "hold" },
          earlier: 422,
          alone: { partner_client_id: "client-6" },
          later: 2008,
        },
        {
          rule: "2008 before 2013",
          both: { partner_client_id: "nobody", asset_pair: "NOPE-AED" },
          earlier: 2008,
          alone: { asset_pair: "NOPE-AED" },
          later: 2013,
        },
        {
          rule: "2008 before the base asset's decimal places",
          both: { partner_client_id: "nobody", asset_pair: "USDT-AED", base_amount: "1.0000001" },
          earlier: 2008,
          alone: { asset_pair: "USDT-AED", base_amount: "1.0000001" },
          later: 422,
        },
        {
          rule: "2009 before 2010",
          both: { partner_client_id: "client-4" },
          earlier: 2009,
          alone: { partner_client_id: "client-3" },
          later: 2010,
        },
        {
          rule: "2009 before 2013",
          both: { partner_client_id: "client-2", asset_pair: "AED-BTC" },
          earlier: 2009,
          alone: { asset_pair: "AED-BTC" },
          later: 2013,
        },
        {
          rule: "2010 before 2013",
          both: { partner_client_id: "client-3", asset_pair: "AED-BTC" },
          earlier: 2010,
          alone: { asset_pair: "AED-BTC" },
          later: 2013,
        },
        {
          rule: "2013 (a pair written the other way round) before the base asset's decimal places",
          both: { asset_pair: "AED-BTC", base_amount: "0.001" },
          earlier: 2013,
          alone: { asset_pair: "USDT-AED", base_amount: "1.0000001" },
          later: 422,
        },
        {
          rule: "2013 (a pair withheld from the partner) before the base asset's decimal places",
          both: { asset_pair: "USDT-USD", base_amount: "1.0000001" },
          earlier: 2013,
          alone: { asset_pair: "USDT-AED", base_amount: "1.0000001" },
          later: 422,
        },
        {
          rule: "2013 before 4000",
          both: { asset_pair: "USDT-USD", base_amount: "1" },
          earlier: 2013,
          alone: { asset_pair: "USDT-AED", base_amount: "1" },
          later: 4000,
        },
        {
          rule: "the base asset's decimal places before 4000",
          both: { asset_pair: "USDT-AED", base_amount: "1.0000001" },
          earlier: 422,
          alone: { asset_pair: "USDT-AED", base_amount: "1" },
          later: 4000,
        },
        {
          rule: "the base asset's decimal places before 4001",
          both: { asset_pair: "USDT-EUR", base_amount: "1.0000001" },
          earlier: 422,
          alone: { asset_pair: "USDT-EUR", base_amount: "1" },
          later: 4001,
        },
        {
          rule: "4000 before 4001",
          both: { asset_pair: "ETH-AED", base_amount: "1" },
          earlier: 4000,
          alone: { asset_pair: "SOL-AED", base_amount: "1" },
          later: 4001,
        },
        {
          rule: "4001 before 4004",
          both: { asset_pair: "SOL-AED", base_amount: "0.001" },
          earlier: 4001,
          alone: { base_amount: "0.00009999" },
          later: 4004,
        },
        {
          rule: "4004 (a sell whose fee eats the proceeds) before 4003",
          both: { asset_pair: "SOL-USD", side: "sell", base_amount: "11" },
          earlier: 4004,
          alone: { side: "sell", base_amount: "10.00000001" },
          later: 4003,
        },
        {
          rule: "4004 before 3005",
          both: { partner_client_id: "client-5", base_amount: "0.00009999" },
          earlier: 4004,
          alone: { partner_client_id: "client-5" },
          later: 3005,
        },
        {
          rule: "4003 before 3005",
          both: { partner_client_id: "client-5", base_amount: "10.00000001" },
          earlier: 4003,
          alone: { partner_client_id: "client-5" },
          later: 3005,
        },
      ],
      quote,
    );
  });

  test("the base asset's decimal places: a 422 at [body, base_amount] in the asset's terms", async () => {
    const res = await quote({ asset_pair: "USDT-AED", base_amount: "1.0000001" });
    assert.equal(res.statusCode, 422);
    assert.deepEqual(res.json(), {
      code: 422,
      msg: "Validation Error",
      msg_detail: [
        {
          loc: ["body", "base_amount"],
          msg: "Decimal input should have no more than 6 decimal places",
          type: "decimal_max_places",
        },
      ],
    });
    // The reported case: a pair written the other way round, an amount fine for its real base.
    assert.deepEqual((await quote({ asset_pair: "AED-BTC", base_amount: "0.001" })).json(), {
      code: 2013,
      msg: "Invalid asset pair",
      msg_detail: null,
    });
  });

  test("execute: 422 → 2020 → 2008 → 2009 → 2010 → 4008", async () => {
    await walk(
      [
        {
          rule: "422 (malformed token) before 2020",
          both: { token: "abc", partner_order_ref: "taken" },
          earlier: 422,
          alone: { token: unknownToken, partner_order_ref: "taken" },
          later: 2020,
        },
        {
          rule: "422 (empty reference) before 2008",
          both: { partner_client_id: "nobody", partner_order_ref: "" },
          earlier: 422,
          alone: { partner_client_id: "nobody" },
          later: 2008,
        },
        {
          rule: "2020 before 2008",
          both: { partner_client_id: "nobody", partner_order_ref: "taken" },
          earlier: 2020,
          alone: { partner_client_id: "nobody" },
          later: 2008,
        },
        {
          rule: "2020 before 2009",
          both: { partner_client_id: "client-2", partner_order_ref: "taken" },
          earlier: 2020,
          alone: { partner_client_id: "client-2" },
          later: 2009,
        },
        {
          rule: "2020 before 4008",
          both: { token: unknownToken, partner_order_ref: "taken" },
          earlier: 2020,
          alone: { token: unknownToken },
          later: 4008,
        },
        {
          rule: "2008 (another partner's client) before 4008",
          both: { partner_client_id: "client-6", token: unknownToken },
          earlier: 2008,
          alone: { token: unknownToken },
          later: 4008,
        },
        {
          rule: "2009 before 2010",
          both: { partner_client_id: "client-4" },
          earlier: 2009,
          alone: { partner_client_id: "client-3" },
          later: 2010,
        },
        {
          rule: "2010 before 4008 (another client's token)",
          both: { partner_client_id: "client-3" },
          earlier: 2010,
          alone: { partner_client_id: "client-5" },
          later: 4008,
        },
      ],
      execute,
    );
    // The token was never spent by any of them.
    const res = await execute({});
    assert.equal(res.statusCode, 200, res.body);
    assert.equal(res.json().result.status, "completed");
  });
});
