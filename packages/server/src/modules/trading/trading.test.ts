// Quotes and execution (docs/decisions.md, "Trading" and "Money"; the trading codes of
// docs/errors.md): every quote and execution error, in the documented order, with nothing changed
// after a failure; execution at the quoted price; rejected executions; fees and VAT per partner;
// expiry and staleness on the injected clock (no test sleeps).

import assert from "node:assert/strict";
import { after, before, beforeEach, describe, test } from "node:test";
import { insertClient } from "../../testing/fixtures.ts";
import { startTestContext, type TestContext } from "../../testing/harness.ts";
import { type MoneyState, moneyState } from "../../testing/money-state.ts";
import { checkLedger } from "../ledger/index.ts";

describe("quotes and execution", () => {
  let ctx: TestContext;
  let refN = 0;
  before(async () => {
    ctx = await startTestContext();
    const db = ctx.services.database.db;
    await insertClient(db, ctx.partner.id, 1);
    await insertClient(db, ctx.partner.id, 2, { status: "under_review" });
    await insertClient(db, ctx.partner.id, 3, { active: false });
    await insertClient(db, ctx.partner.id, 4);
    await fund("client-1", "AED", "100000");
    await fund("client-4", "AED", "1000");
    // Exact, unmoving prices for the arithmetic below.
    await ctx.adminRequest("PUT", "/admin/pairs/BTC-AED/price", {
      buy: "350000",
      sell: "349000",
      reason: "test set-up",
    });
  });
  after(async () => {
    await ctx.close();
  });

  async function fund(client: string, asset: string, amount: string) {
    const res = await ctx.signed({
      method: "POST",
      url: "/v1/partner/deposits",
      body: { partner_client_id: client, asset_id: asset, amount, partner_order_ref: `fund-${++refN}` },
    });
    assert.equal(res.statusCode, 200, res.body);
  }
  const quote = (over: Record<string, unknown> = {}, partner = ctx.partner) =>
    ctx.signed({
      method: "POST",
      url: "/v1/partner/quotes",
      partner,
      body: {
        partner_client_id: "client-1",
        asset_pair: "BTC-AED",
        side: "buy",
        base_amount: "0.01",
        ...over,
      },
    });
  const execute = (body: Record<string, unknown>, partner = ctx.partner) =>
    ctx.signed({
      method: "POST",
      url: "/v1/partner/quotes/execute",
      partner,
      body: { partner_client_id: "client-1", ...body },
    });
  async function balance(asset: string, client = "client-1"): Promise<string> {
    const res = await ctx.signed({
      method: "GET",
      url: `/v1/partner/balances/${asset}?partner_client_id=${client}`,
    });
    return res.json().result.available_balance;
  }

  /**
   * A verified client of the test's own with `aed` AED, for a test that checks exact balances: its
   * figures then depend on nothing another test did, whatever the order.
   */
  async function ownClient(n: number, aed: string): Promise<string> {
    const { partnerClientId } = await insertClient(ctx.services.database.db, ctx.partner.id, n);
    await fund(partnerClientId, "AED", aed);
    return partnerClientId;
  }

  let snapshot: MoneyState;
  beforeEach(async () => {
    snapshot = await moneyState(ctx.services.database.db);
  });
  async function assertUnchanged() {
    assert.deepEqual(await moneyState(ctx.services.database.db), snapshot);
  }

  test("a quote: price, amounts, fee, VAT, lifetime in seconds and a token", async () => {
    const res = await quote();
    assert.equal(res.statusCode, 200);
    const q = res.json().result;
    assert.equal(q.market_price, "350000.00000000");
    assert.equal(q.base_amount, "0.01000000");
    assert.equal(q.quote_amount, "3500.00000000");
    assert.equal(q.fee_amount, "17.50000000");
    assert.equal(q.vat_percentage, null);
    assert.equal(q.vat_amount, "0E-8");
    assert.equal(q.lifetime, 15);
    assert.match(q.token, /^qt_[A-Za-z0-9_-]{43}$/);
    // A quote reserves nothing.
    await assertUnchanged();
  });

  test("execute a buy at the quoted price: the order's legs, balances moved, ledger clean", async () => {
    const client = await ownClient(11, "100000");
    const q = (await quote({ partner_client_id: client })).json().result;
    // The price moves after the quote; execution keeps the quoted price.
    await ctx.adminRequest("PUT", "/admin/pairs/BTC-AED/price", {
      buy: "360000",
      sell: "359000",
      reason: "test set-up",
    });
    const res = await execute({ token: q.token, partner_client_id: client, partner_order_ref: "buy-1" });
    assert.equal(res.statusCode, 200);
    const o = res.json().result;
    assert.equal(o.type, "buy");
    assert.equal(o.source, "market");
    assert.equal(o.status, "completed");
    assert.equal(o.price, "350000.00000000");
    assert.equal(o.debit, "0.01000000");
    assert.equal(o.debit_asset_id, "BTC");
    assert.equal(o.credit, "3500.00000000");
    assert.equal(o.credit_asset_id, "AED");
    assert.equal(o.fee, "17.50000000");
    assert.equal(o.fee_asset_id, "AED");
    assert.equal(o.vat, "0E-8");
    assert.equal(o.partner_order_ref, "buy-1");
    assert.equal(await balance("BTC", client), "0.01000000");
    assert.equal(await balance("AED", client), "96482.50000000");
    assert.deepEqual(await checkLedger(ctx.services.database.db), []);
    await ctx.adminRequest("PUT", "/admin/pairs/BTC-AED/price", {
      buy: "350000",
      sell: "349000",
      reason: "test set-up",
    });
  });

  test("execute a sell: debit is the quote asset received, credit the base asset given", async () => {
    // 0.01 BTC bought first, as in the test above: 96482.50 AED left.
    const client = await ownClient(12, "100000");
    const bought = (await quote({ partner_client_id: client })).json().result;
    assert.equal((await execute({ token: bought.token, partner_client_id: client })).statusCode, 200);
    const q = (await quote({ partner_client_id: client, side: "sell", base_amount: "0.004" })).json().result;
    assert.equal(q.market_price, "349000.00000000");
    assert.equal(q.quote_amount, "1396.00000000");
    assert.equal(q.fee_amount, "6.98000000");
    const res = await execute({ token: q.token, partner_client_id: client });
    const o = res.json().result;
    assert.equal(o.type, "sell");
    assert.equal(o.partner_order_ref, null);
    assert.equal(o.debit, "1396.00000000");
    assert.equal(o.debit_asset_id, "AED");
    assert.equal(o.credit, "0.00400000");
    assert.equal(o.credit_asset_id, "BTC");
    assert.equal(await balance("BTC", client), "0.00600000");
    assert.equal(await balance("AED", client), "97871.52000000");
    // Without a reference the order is found by id only.
    const byId = await ctx.signed({ method: "GET", url: `/v1/partner/orders/${o.id}` });
    assert.equal(byId.json().result.id, o.id);
    assert.deepEqual(await checkLedger(ctx.services.database.db), []);
  });

  test("fee and VAT per partner: pair rate, partner default, catalog default; VAT on the fee", async () => {
    await ctx.adminRequest("PUT", `/admin/partners/${ctx.partner.id}/fees`, {
      fee_rate: "0.01",
      vat_percentage: "5",
    });
    let q = (await quote()).json().result;
    assert.equal(q.fee_amount, "35.00000000");
    assert.equal(q.vat_percentage, "5.0000");
    assert.equal(q.vat_amount, "1.75000000");
    await ctx.adminRequest("PUT", `/admin/partners/${ctx.partner.id}/pairs/BTC-AED`, { fee_rate: "0.002" });
    q = (await quote()).json().result;
    assert.equal(q.fee_amount, "7.00000000");
    assert.equal(q.vat_amount, "0.35000000");
    const before = await balance("AED");
    const o = (await execute({ token: q.token })).json().result;
    assert.equal(o.fee, "7.00000000");
    assert.equal(o.vat, "0.35000000");
    assert.equal(
      await balance("AED"),
      (BigInt(before.replace(".", "")) - 350735000000n).toString().replace(/(\d{8})$/, ".$1"),
    );
    await ctx.adminRequest("PUT", `/admin/partners/${ctx.partner.id}/pairs/BTC-AED`, { fee_rate: null });
    await ctx.adminRequest("PUT", `/admin/partners/${ctx.partner.id}/fees`, {
      fee_rate: null,
      vat_percentage: null,
    });
    q = (await quote()).json().result;
    assert.equal(q.fee_amount, "17.50000000");
    assert.equal(q.vat_percentage, null);
    const revenue = await ctx.services.database.db
      .selectFrom("accounts")
      .select(["kind", "balance"])
      .where("kind", "in", ["fee_revenue", "vat_payable"])
      .where("asset_id", "=", "AED")
      .orderBy("kind")
      .execute();
    // House accounts are split into slots by client: one row per slot that holds a fee. This is
    // the file's only execution with VAT, so one vat_payable row holds exactly its VAT.
    assert.deepEqual([...new Set(revenue.map((r) => r.kind))], ["fee_revenue", "vat_payable"]);
    assert.deepEqual(
      revenue.filter((r) => r.kind === "vat_payable").map((r) => r.balance),
      ["0.35000000"],
    );
  });

  test("quote validation: 422 for side, amounts and missing fields", async () => {
    for (const [over, field, type] of [
      [{ side: "hold" }, "side", undefined],
      [{ base_amount: "0" }, "base_amount", "greater_than"],
      [{ base_amount: "-1" }, "base_amount", "greater_than"],
      [{ base_amount: 0.01 }, "base_amount", "string_type"],
      [{ base_amount: "1e-9" }, "base_amount", "decimal_max_places"],
      [{ asset_pair: 7 }, "asset_pair", "string_type"],
    ] as [Record<string, unknown>, string, string | undefined][]) {
      const res = await quote(over);
      assert.equal(res.statusCode, 422, JSON.stringify(over));
      assert.deepEqual(res.json().msg_detail[0].loc, ["body", field]);
      if (type) assert.equal(res.json().msg_detail[0].type, type);
    }
    // USDT has 6 decimal places: a finer base amount is refused once the pair is known (the order
    // of checks is walked in check-order.test.ts).
    const fine = await quote({ asset_pair: "USDT-AED", base_amount: "1.0000001" });
    assert.equal(fine.statusCode, 422);
    assert.deepEqual(fine.json().msg_detail[0], {
      loc: ["body", "base_amount"],
      msg: "Decimal input should have no more than 6 decimal places",
      type: "decimal_max_places",
    });
    const empty = await ctx.signed({ method: "POST", url: "/v1/partner/quotes", body: {} });
    assert.equal(empty.json().msg_detail.length, 4);
    await assertUnchanged();
  });

  test("quote client errors 2008, 2009, 2010 come before the pair", async () => {
    for (const [client, code] of [
      ["nobody", 2008],
      ["client-2", 2009],
      ["client-3", 2010],
    ] as const) {
      const res = await quote({ partner_client_id: client, asset_pair: "NOPE-AED" });
      assert.equal(res.statusCode, 400);
      assert.deepEqual(res.json().msg_detail, null);
      assert.equal(res.json().code, code);
    }
    await assertUnchanged();
  });

  test("2013 for an unknown pair or one withheld from the partner", async () => {
    for (const pair of ["NOPE-AED", "AED-BTC", "btc-aed"]) {
      const res = await quote({ asset_pair: pair });
      assert.deepEqual(res.json(), { code: 2013, msg: "Invalid asset pair", msg_detail: null });
    }
    await ctx.adminRequest("PUT", `/admin/partners/${ctx.partner.id}/pairs/ETH-AED`, { available: false });
    assert.equal((await quote({ asset_pair: "ETH-AED" })).json().code, 2013);
    await ctx.adminRequest("PUT", `/admin/partners/${ctx.partner.id}/pairs/ETH-AED`, { available: true });
    assert.equal((await quote({ asset_pair: "ETH-AED" })).statusCode, 200);
    await assertUnchanged();
  });

  test("4000 when not tradable and 4001 when the price is stale, each with {quote} and a null token", async () => {
    await ctx.adminRequest("PUT", "/admin/pairs/BTC-AED", { tradable: false });
    const off = await quote();
    assert.equal(off.json().code, 4000);
    assert.equal(off.json().msg, "Trading is not available");
    assert.equal(off.json().msg_detail.quote.token, null);
    assert.equal(off.json().msg_detail.quote.market_price, "350000.00000000");
    await ctx.adminRequest("PUT", "/admin/pairs/BTC-AED", { tradable: true });

    // 60 s is the staleness bound: a tick exactly 60 s old is fresh, 60.001 s is stale. The
    // harness signs each request 1 ms after the last, so "now" for the quote is clock + 1 ms.
    const at = (ageMs: number) => new Date(ctx.clock.nowMs() + 1 - ageMs).toISOString();
    await ctx.adminRequest("PUT", "/admin/pairs/BTC-AED/price", {
      buy: "350000",
      sell: "349000",
      at: at(60_000),
      reason: "test set-up",
    });
    assert.equal((await quote()).statusCode, 200);
    await ctx.adminRequest("PUT", "/admin/pairs/BTC-AED/price", {
      buy: "350000",
      sell: "349000",
      at: at(60_001),
      reason: "test set-up",
    });
    const stale = await quote();
    assert.equal(stale.json().code, 4001);
    assert.equal(stale.json().msg_detail.quote.token, null);
    await ctx.adminRequest("PUT", "/admin/pairs/BTC-AED/price", {
      buy: "350000",
      sell: "349000",
      reason: "test set-up",
    });
    await assertUnchanged();
  });

  test("4004 and 4003 with {limit, quote}; the bounds themselves are allowed", async () => {
    const low = await quote({ base_amount: "0.00009999" });
    assert.equal(low.json().code, 4004);
    assert.equal(low.json().msg_detail.limit, "0.00010000");
    assert.equal(low.json().msg_detail.quote.base_amount, "0.00009999");
    assert.equal(low.json().msg_detail.quote.token, null);
    const high = await quote({ base_amount: "10.00000001" });
    assert.equal(high.json().code, 4003);
    assert.equal(high.json().msg, "Amount exceeds the maximum allowed");
    assert.equal(high.json().msg_detail.limit, "10.00000000");
    assert.equal((await quote({ base_amount: "0.0001" })).statusCode, 200);
    await fund("client-1", "AED", "5000000");
    assert.equal((await quote({ base_amount: "10" })).statusCode, 200);
    snapshot = await moneyState(ctx.services.database.db);
    await assertUnchanged();
  });

  test("3005 'Insufficient funds' with {quote} when the client cannot pay (buy) or deliver (sell)", async () => {
    const buy = await quote({ partner_client_id: "client-4", base_amount: "0.01" });
    assert.equal(buy.json().code, 3005);
    assert.equal(buy.json().msg, "Insufficient funds");
    assert.equal(buy.json().msg_detail.quote.quote_amount, "3500.00000000");
    assert.equal(buy.json().msg_detail.quote.token, null);
    const sell = await quote({ partner_client_id: "client-4", side: "sell", base_amount: "0.01" });
    assert.equal(sell.json().code, 3005);
    await assertUnchanged();
  });

  test("execute: 422 for a malformed token; 4008 for unknown, spent, expired, other client's, other partner's", async () => {
    for (const token of [
      "",
      "abc",
      "qt_short",
      `qt_${"a".repeat(44)}`,
      `xx_${"a".repeat(43)}`,
      `qt_${"+".repeat(43)}`,
    ]) {
      const res = await execute({ token });
      assert.equal(res.statusCode, 422, token);
      assert.deepEqual(res.json().msg_detail[0].loc, ["body", "token"]);
    }
    assert.equal((await execute({})).statusCode, 422);
    const unknown = await execute({ token: `qt_${"A".repeat(43)}` });
    assert.deepEqual(unknown.json(), { code: 4008, msg: "Trading token is invalid", msg_detail: null });

    const q = (await quote()).json().result;
    snapshot = await moneyState(ctx.services.database.db);
    assert.equal((await execute({ token: q.token, partner_client_id: "client-4" })).json().code, 4008);
    const other = await ctx.addPartner();
    await insertClient(ctx.services.database.db, other.id, 1);
    assert.equal((await execute({ token: q.token }, other)).json().code, 4008);
    await assertUnchanged();
    // Still usable by its own client: failed executions do not spend it.
    assert.equal((await execute({ token: q.token })).statusCode, 200);
    assert.equal((await execute({ token: q.token })).json().code, 4008, "spent");

    // Expiry: valid until lifetime seconds have passed, then 4008.
    const q2 = (await quote()).json().result;
    ctx.clock.advance(14_999);
    const q3 = (await quote()).json().result;
    ctx.clock.advance(1_000);
    snapshot = await moneyState(ctx.services.database.db);
    assert.equal((await execute({ token: q2.token })).json().code, 4008, "expired after 15 s");
    await assertUnchanged();
    assert.equal((await execute({ token: q3.token })).statusCode, 200);
    // Keep prices fresh for the tests after this one.
    await ctx.adminRequest("PUT", "/admin/pairs/BTC-AED/price", {
      buy: "350000",
      sell: "349000",
      reason: "test set-up",
    });
  });

  test("execute: 2008/2009/2010 for the client, and 2020 (409) for a reused reference, before the token", async () => {
    // A trade of this test's own holds the reference reused below.
    const first = (await quote()).json().result;
    assert.equal((await execute({ token: first.token, partner_order_ref: "trade-ref-1" })).statusCode, 200);
    const q = (await quote()).json().result;
    snapshot = await moneyState(ctx.services.database.db);
    assert.equal((await execute({ token: q.token, partner_client_id: "nobody" })).json().code, 2008);
    assert.equal((await execute({ token: q.token, partner_client_id: "client-2" })).json().code, 2009);
    assert.equal((await execute({ token: q.token, partner_client_id: "client-3" })).json().code, 2010);
    const dup = await execute({ token: q.token, partner_order_ref: "trade-ref-1" });
    assert.equal(dup.statusCode, 409);
    assert.deepEqual(dup.json(), {
      code: 2020,
      msg: "An order with this partner_order_ref already exists",
      msg_detail: null,
    });
    const dupBadToken = await execute({ token: `qt_${"B".repeat(43)}`, partner_order_ref: "fund-1" });
    assert.equal(dupBadToken.json().code, 2020, "deposits and trades share one reference namespace");
    // The reference before the client too.
    for (const who of ["nobody", "client-2", "client-3"]) {
      const r = await execute({ token: q.token, partner_client_id: who, partner_order_ref: "trade-ref-1" });
      assert.equal(r.json().code, 2020, who);
    }
    await assertUnchanged();
    assert.equal((await execute({ token: q.token, partner_order_ref: "buy-2" })).statusCode, 200);
  });

  test("funds gone since the quote: an order in status rejected, HTTP 200, no balance change, token spent", async () => {
    const q = (await quote({ partner_client_id: "client-4", base_amount: "0.002" })).json().result;
    assert.ok(q.token, "client-4 can afford 0.002 BTC now");
    // The client spends its AED elsewhere.
    const w = await ctx.signed({
      method: "POST",
      url: "/v1/partner/withdrawals",
      body: { partner_client_id: "client-4", asset_id: "AED", amount: "900", partner_order_ref: "drain" },
    });
    assert.equal(w.statusCode, 200);
    const aedBefore = await balance("AED", "client-4");
    const before = await moneyState(ctx.services.database.db);
    const res = await execute({ token: q.token, partner_client_id: "client-4", partner_order_ref: "late" });
    assert.equal(res.statusCode, 200);
    const o = res.json().result;
    assert.equal(o.status, "rejected");
    assert.equal(o.price, "350000.00000000");
    assert.equal(o.debit, "0.00200000");
    assert.equal(o.credit, "700.00000000");
    assert.equal(o.fee, "3.50000000");
    assert.equal(await balance("AED", "client-4"), aedBefore);
    assert.equal(await balance("BTC", "client-4"), "0E-8");
    const afterState = await moneyState(ctx.services.database.db);
    assert.equal(afterState.orders, before.orders + 1);
    assert.equal(afterState.postings, before.postings, "no postings for a rejected order");
    assert.equal(afterState.accounts, before.accounts);
    assert.equal((await execute({ token: q.token, partner_client_id: "client-4" })).json().code, 4008);
    const byRef = await ctx.signed({ method: "GET", url: "/v1/partner/orders/ref/late" });
    assert.equal(byRef.json().result.status, "rejected");
    assert.deepEqual(await checkLedger(ctx.services.database.db), []);
  });

  test("a rejected sell moves nothing: the proceeds are not credited when the base asset is gone", async () => {
    await insertClient(ctx.services.database.db, ctx.partner.id, 9);
    await fund("client-9", "AED", "10000");
    const buy = (await quote({ partner_client_id: "client-9", base_amount: "0.01" })).json().result;
    assert.equal(
      (await execute({ token: buy.token, partner_client_id: "client-9" })).json().result.status,
      "completed",
    );
    // Two sells of the whole BTC holding; only the first can be delivered.
    const s1 = (await quote({ partner_client_id: "client-9", side: "sell", base_amount: "0.01" })).json()
      .result;
    const s2 = (await quote({ partner_client_id: "client-9", side: "sell", base_amount: "0.01" })).json()
      .result;
    assert.equal(
      (await execute({ token: s1.token, partner_client_id: "client-9" })).json().result.status,
      "completed",
    );
    const aed = await balance("AED", "client-9");
    const before = await moneyState(ctx.services.database.db);
    const second = (await execute({ token: s2.token, partner_client_id: "client-9" })).json().result;
    assert.equal(second.status, "rejected");
    assert.equal(await balance("AED", "client-9"), aed);
    assert.equal(await balance("BTC", "client-9"), "0E-8");
    const after = await moneyState(ctx.services.database.db);
    assert.equal(after.accounts, before.accounts);
    assert.equal(after.postings, before.postings);
    assert.deepEqual(await checkLedger(ctx.services.database.db), []);
  });

  test("isolation: another partner cannot quote for this partner's clients", async () => {
    const other = await ctx.addPartner();
    assert.equal((await quote({}, other)).json().code, 2008);
  });
});
