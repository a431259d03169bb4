// Concurrency on PostgreSQL, trading part (docs/decisions.md, "Trading" and "Money"): one quote token
// executed many times at once makes one order; buys racing on a balance that affords ten make
// exactly ten orders and reject the rest (HTTP 200, status rejected), never overdrawing; a mixed
// race of buys and sells on one client ends exactly where the completed orders say, with a clean
// ledger.
//
// On PostgreSQL (`npm run test:pg`) the requests alternate between two `counterpart serve`
// processes sharing one fresh database. On PGlite (`npm test`) they run in-process through one
// test context; PGlite serialises them, and the same assertions must hold.

import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { formatDecimal } from "@counterpart/protocol";
import { insertClient } from "../../testing/fixtures.ts";
import { onPostgres } from "../../testing/harness.ts";
import {
  type ApiResponse,
  type SignedApi,
  type SignedCall,
  scaled,
  startInProcessApi,
  startTwoProcessApi,
  tally,
} from "../../testing/signed-api.ts";
import { checkLedger } from "../ledger/index.ts";

interface QuoteBody {
  market_price: string;
  base_amount: string;
  quote_amount: string;
  fee_amount: string;
  vat_amount: string;
  token: string | null;
}

interface OrderBody {
  id: number;
  type: string;
  status: string;
  partner_order_ref: string | null;
  partner_client_id: string;
  price: string;
  debit: string;
  debit_asset_id: string;
  credit: string;
  credit_asset_id: string;
  fee: string;
  vat: string;
}

interface BalanceBody {
  asset_id: string;
  balance: string;
  available_balance: string;
}

const timeout = 60_000;
const pair = "BTC-AED";
const price = { buy: "350000", sell: "349000" };
const invalidToken = { code: 4008, msg: "Trading token is invalid", msg_detail: null };

/** How many orders of each status. */
function statuses(orders: readonly OrderBody[]): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const o of orders) counts[o.status] = (counts[o.status] ?? 0) + 1;
  return counts;
}

const orderOf = (r: ApiResponse) => (r.body as { result: OrderBody }).result;
const quoteOf = (r: ApiResponse) => (r.body as { result: QuoteBody }).result;
/** What a buy costs in the quote asset: quote amount, fee and VAT. */
const buyCost = (q: QuoteBody) => scaled(q.quote_amount) + scaled(q.fee_amount) + scaled(q.vat_amount);
/** What a sell pays out in the quote asset: quote amount less fee and VAT. */
const sellProceeds = (q: QuoteBody) => scaled(q.quote_amount) - scaled(q.fee_amount) - scaled(q.vat_amount);

describe(`trading under concurrency (${onPostgres ? "two API processes on PostgreSQL" : "in-process"})`, () => {
  let api: SignedApi;
  let refN = 0;
  before(async () => {
    api = onPostgres ? await startTwoProcessApi() : await startInProcessApi();
    // A VAT on the fee, so that every amount of a buy's cost is non-zero.
    const fees = await api.admin("PUT", `/admin/partners/${api.partnerId}/fees`, { vat_percentage: "5" });
    assert.equal(fees.status, 200, JSON.stringify(fees.body));
  });
  after(async () => {
    if (api !== undefined) await api.close();
  });

  /** The tail of the API processes' output, for a failure message. */
  const logs = () => api.logs().slice(-4_000);

  /**
   * Every request is signed at a time of its own. Ed25519 is deterministic: identical bodies (a
   * quote's, a balance read's) signed in one millisecond would carry one signature, and all but
   * one would be refused as replays. Times run a little behind the API's clock, so that a burst
   * of requests fits below "now", and strictly increase.
   */
  let lastSignedAt = 0;
  function signingTime(): number {
    lastSignedAt = Math.max(lastSignedAt + 1, api.nowMs() - 5_000);
    return lastSignedAt;
  }
  const send = (c: Omit<SignedCall, "timestampMs">) => api.call({ ...c, timestampMs: signingTime() });

  /**
   * A fixed price with a fresh tick. The feed is manual, so the tick only ages: each test sets it
   * again and stays far inside the 60 s staleness bound.
   */
  async function fixPrice(): Promise<void> {
    const res = await api.admin("PUT", `/admin/pairs/${pair}/price`, { ...price, reason: "test set-up" });
    assert.equal(res.status, 200, JSON.stringify(res.body));
  }

  async function deposit(client: string, amount: bigint): Promise<void> {
    const res = await send({
      method: "POST",
      url: "/v1/partner/deposits",
      body: {
        partner_client_id: client,
        asset_id: "AED",
        amount: formatDecimal(amount),
        partner_order_ref: `trading-race-funding-${++refN}`,
      },
    });
    assert.equal(res.status, 200, JSON.stringify(res.body));
  }

  type Extra = Pick<SignedCall, "via">;
  const quote = (client: string, side: "buy" | "sell", baseAmount: string, extra: Extra = {}) =>
    send({
      method: "POST",
      url: "/v1/partner/quotes",
      body: { partner_client_id: client, asset_pair: pair, side, base_amount: baseAmount },
      ...extra,
    });
  const execute = (client: string, token: string, ref: string | null, extra: Extra = {}) =>
    send({
      method: "POST",
      url: "/v1/partner/quotes/execute",
      body: { partner_client_id: client, token, ...(ref === null ? {} : { partner_order_ref: ref }) },
      ...extra,
    });

  /** `n` quotes with one body, requested at once across the processes. */
  async function quotes(client: string, side: "buy" | "sell", baseAmount: string, n: number) {
    const responses = await Promise.all(
      Array.from({ length: n }, (_, i) => quote(client, side, baseAmount, { via: i })),
    );
    assert.deepEqual(tally(responses), { "200": n }, `${JSON.stringify(responses[0]?.body)}\n${logs()}`);
    return responses.map(quoteOf);
  }

  /** The client's balance and available balance per asset, from GET /v1/partner/balances. */
  async function balances(client: string, via = 0): Promise<Map<string, BalanceBody>> {
    const res = await send({
      method: "GET",
      url: `/v1/partner/balances?partner_client_id=${client}`,
      via,
    });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    return new Map((res.body as { items: BalanceBody[] }).items.map((b) => [b.asset_id, b]));
  }

  /** AED and BTC balances (balance = available balance, no holds), as written on the wire. */
  async function aedBtc(client: string): Promise<{ AED: string; BTC: string }> {
    const all = await balances(client);
    const pick = (asset: string) => {
      const b = all.get(asset);
      assert.ok(b, `a ${asset} entry`);
      assert.equal(b.available_balance, b.balance);
      return b.balance;
    };
    return { AED: pick("AED"), BTC: pick("BTC") };
  }

  async function orderRows(clientId: number) {
    return api.db
      .selectFrom("orders")
      .select(["id", "type", "status", "partner_order_ref"])
      .where("client_id", "=", clientId)
      .orderBy("id")
      .execute();
  }

  async function postingsOf(orderIds: readonly number[]): Promise<number> {
    if (orderIds.length === 0) return 0;
    const rows = await api.db.selectFrom("postings").select("id").where("order_id", "in", orderIds).execute();
    return rows.length;
  }

  test("one token executed 20 times at once: exactly one order, 19 × 4008, the balances move once", {
    timeout,
  }, async () => {
    await fixPrice();
    const client = await insertClient(api.db, api.partnerId, 1);
    await deposit("client-1", 10_000_00000000n);
    const before = await aedBtc("client-1");

    const q = quoteOf(await quote("client-1", "buy", "0.01"));
    assert.ok(q.token, "a token");
    // Distinct references make distinct bodies, hence distinct signatures.
    const refs = Array.from({ length: 20 }, (_, i) => `same-token-${i}`);
    const responses = await Promise.all(refs.map((ref, i) => execute("client-1", q.token!, ref, { via: i })));
    assert.deepEqual(tally(responses), { "200": 1, "400/4008": 19 }, logs());
    for (const r of responses) if (r.status !== 200) assert.deepEqual(r.body, invalidToken);

    const winner = responses.find((r) => r.status === 200)!;
    const order = orderOf(winner);
    assert.equal(order.type, "buy");
    assert.equal(order.status, "completed");
    assert.equal(order.partner_order_ref, refs[responses.indexOf(winner)]);
    assert.equal(order.price, "350000.00000000");
    assert.equal(order.debit, q.base_amount);
    assert.equal(order.credit, q.quote_amount);
    assert.equal(order.fee, q.fee_amount);
    assert.equal(order.vat, q.vat_amount);

    // One buy row for the client; the losers' references were not consumed.
    const rows = await orderRows(client.id);
    assert.deepEqual(
      rows.filter((o) => o.type === "buy").map((o) => [o.id, o.status, o.partner_order_ref]),
      [[order.id, "completed", order.partner_order_ref]],
    );
    const loserRef = refs.find((ref) => ref !== order.partner_order_ref)!;
    const byRef = await send({ method: "GET", url: `/v1/partner/orders/ref/${loserRef}`, via: 1 });
    assert.equal(byRef.status, 404, JSON.stringify(byRef.body));

    assert.deepEqual(await aedBtc("client-1"), {
      AED: formatDecimal(scaled(before.AED) - buyCost(q)),
      BTC: formatDecimal(scaled(before.BTC) + scaled(q.base_amount)),
    });
    // The spent token stays spent, on either process.
    for (let via = 0; via < api.processes; via++) {
      const again = await execute("client-1", q.token, `same-token-again-${via}`, { via });
      assert.deepEqual(again.body, invalidToken);
    }
    assert.deepEqual(await checkLedger(api.db), []);
  });

  test("50 buys racing on a balance that affords 10: exactly 10 completed, 40 rejected, nothing overdrawn", {
    timeout,
  }, async () => {
    await fixPrice();
    const client = await insertClient(api.db, api.partnerId, 2);
    const baseAmount = "0.01";
    // With nothing to pay with, the quote is a 3005 that carries the amounts: the cost of one buy.
    const probe = await quote("client-2", "buy", baseAmount);
    assert.equal(probe.status, 400, JSON.stringify(probe.body));
    const priced = (probe.body as { code: number; msg_detail: { quote: QuoteBody } }).msg_detail.quote;
    assert.equal((probe.body as { code: number }).code, 3005);
    const cost = buyCost(priced);
    assert.ok(scaled(priced.vat_amount) > 0n, "VAT is part of the cost");
    await deposit("client-2", 10n * cost);

    // Each quote alone is affordable, so every one is given (a quote reserves nothing).
    const given = await quotes("client-2", "buy", baseAmount, 50);
    for (const q of given) assert.equal(buyCost(q), cost);

    const refs = given.map((_, i) => `buy-race-${i}`);
    const responses = await Promise.all(
      given.map((q, i) => execute("client-2", q.token!, refs[i]!, { via: i })),
    );
    assert.deepEqual(tally(responses), { "200": 50 }, logs());
    const orders = responses.map(orderOf);
    assert.deepEqual(statuses(orders), { completed: 10, rejected: 40 });
    for (const [i, o] of orders.entries()) {
      assert.equal(o.type, "buy");
      assert.equal(o.partner_order_ref, refs[i]);
      // A rejected order still shows what would have happened.
      assert.equal(o.debit, given[i]!.base_amount);
      assert.equal(o.credit, given[i]!.quote_amount);
      assert.equal(o.fee, given[i]!.fee_amount);
      assert.equal(o.vat, given[i]!.vat_amount);
    }

    assert.deepEqual(await aedBtc("client-2"), {
      AED: "0E-8",
      BTC: formatDecimal(10n * scaled(baseAmount)),
    });
    const rows = await orderRows(client.id);
    const buys = rows.filter((o) => o.type === "buy");
    assert.equal(buys.length, 50);
    assert.deepEqual(
      buys.map((o) => o.partner_order_ref).sort(),
      [...refs].sort(),
      "one row per execution, under its own reference",
    );
    const completed = buys.filter((o) => o.status === "completed").map((o) => o.id);
    const rejected = buys.filter((o) => o.status === "rejected").map((o) => o.id);
    assert.equal(completed.length, 10);
    assert.equal(rejected.length, 40);
    assert.equal(await postingsOf(rejected), 0, "a rejected order posts nothing");
    // Every quote was spent, each by an order of its own; executing one again is a 4008.
    const spent = await api.db
      .selectFrom("quotes")
      .select(["spent_at", "order_id"])
      .where("client_id", "=", client.id)
      .execute();
    assert.equal(spent.length, 50);
    assert.ok(spent.every((s) => s.spent_at !== null));
    assert.deepEqual(
      spent.map((s) => Number(s.order_id)).sort((a, b) => a - b),
      buys.map((o) => Number(o.id)).sort((a, b) => a - b),
    );
    assert.deepEqual((await execute("client-2", given[0]!.token!, null)).body, invalidToken);
    assert.deepEqual(await checkLedger(api.db), []);
  });

  test("a race of buys, sells and reads on one client: never negative, no 500, balances exactly the completed orders, clean ledger", {
    timeout,
  }, async (t) => {
    await fixPrice();
    const client = await insertClient(api.db, api.partnerId, 3);
    // BTC is not depositable: the client buys its opening BTC.
    await deposit("client-3", 15_000_00000000n);
    const opening = quoteOf(await quote("client-3", "buy", "0.02"));
    const openingOrder = await execute("client-3", opening.token!, "mixed-race-opening");
    assert.equal(orderOf(openingOrder).status, "completed");
    const start = await aedBtc("client-3");
    assert.equal(start.BTC, "0.02000000");

    // Sells of 0.004 × 20 = 0.08 BTC, more than the client can ever hold (0.02 + 20 × 0.002 bought):
    // at least five sells are rejected, and the first to run always completes. Buys of 0.002 × 20:
    // the first to run finds the AED left after the opening buy.
    const sells = await quotes("client-3", "sell", "0.004", 20);
    const buys = await quotes("client-3", "buy", "0.002", 20);
    type Op = { kind: "buy" | "sell"; q: QuoteBody; ref: string } | { kind: "read" };
    const ops: Op[] = [];
    for (let i = 0; i < 20; i++) {
      ops.push({ kind: "sell", q: sells[i]!, ref: `mixed-race-sell-${i}` });
      ops.push({ kind: "buy", q: buys[i]!, ref: `mixed-race-buy-${i}` });
      if (i % 2 === 1) ops.push({ kind: "read" });
    }
    const responses = await Promise.all(
      ops.map((op, i) =>
        op.kind === "read"
          ? send({ method: "GET", url: "/v1/partner/balances?partner_client_id=client-3", via: i })
          : execute("client-3", op.q.token!, op.ref, { via: i }),
      ),
    );

    const unavailable = responses.filter((r) => r.status === 503).length;
    if (unavailable > 0) t.diagnostic(`${unavailable} executions answered 503 after bounded retries`);
    let aed = scaled(start.AED);
    let btc = scaled(start.BTC);
    const seen = { buy: { completed: 0, rejected: 0 }, sell: { completed: 0, rejected: 0 }, reads: 0 };
    for (const [i, op] of ops.entries()) {
      const r = responses[i]!;
      assert.notEqual(r.status, 500, `${JSON.stringify(r.body)}\n${logs()}`);
      if (op.kind === "read") {
        assert.equal(r.status, 200, JSON.stringify(r.body));
        for (const b of (r.body as { items: BalanceBody[] }).items) {
          assert.ok(scaled(b.balance) >= 0n, `a read saw a negative ${b.asset_id} balance: ${b.balance}`);
          assert.equal(b.available_balance, b.balance);
        }
        seen.reads++;
        continue;
      }
      if (r.status === 503) {
        assert.deepEqual(r.body, { code: 503, msg: "Service Unavailable", msg_detail: null });
        continue;
      }
      assert.equal(r.status, 200, `${op.kind}: ${JSON.stringify(r.body)}\n${logs()}`);
      const o = orderOf(r);
      assert.equal(o.type, op.kind);
      assert.equal(o.partner_order_ref, op.ref);
      assert.ok(o.status === "completed" || o.status === "rejected", o.status);
      seen[op.kind][o.status as "completed" | "rejected"]++;
      if (o.status !== "completed") continue;
      if (op.kind === "buy") {
        aed -= buyCost(op.q);
        btc += scaled(op.q.base_amount);
      } else {
        aed += sellProceeds(op.q);
        btc -= scaled(op.q.base_amount);
      }
    }
    assert.ok(seen.buy.completed > 0, `some buys complete: ${JSON.stringify(seen)}`);
    assert.ok(seen.sell.completed > 0, `some sells complete: ${JSON.stringify(seen)}`);
    assert.ok(seen.sell.rejected >= 5, `sells beyond any BTC held are rejected: ${JSON.stringify(seen)}`);
    assert.equal(seen.reads, 10);
    assert.ok(aed >= 0n && btc >= 0n);

    // The balances are exactly the opening ones moved by the completed orders.
    const differences = await checkLedger(api.db);
    assert.deepEqual(
      await aedBtc("client-3"),
      { AED: formatDecimal(aed), BTC: formatDecimal(btc) },
      `${JSON.stringify(seen)}; ledger differences: ${JSON.stringify(differences)}`,
    );
    const rows = await orderRows(client.id);
    const traded = rows.filter((o) => o.type === "buy" || o.type === "sell");
    const counted = seen.buy.completed + seen.buy.rejected + seen.sell.completed + seen.sell.rejected;
    assert.equal(traded.length, 1 + counted, "one row per answered execution, none for a 503");
    const rejectedIds = traded.filter((o) => o.status === "rejected").map((o) => o.id);
    assert.equal(rejectedIds.length, seen.buy.rejected + seen.sell.rejected);
    assert.equal(await postingsOf(rejectedIds), 0, "a rejected order posts nothing");
    assert.deepEqual(differences, []);
  });
});
