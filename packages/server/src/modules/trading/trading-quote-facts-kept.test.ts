// Quote facts kept by the process that read them (docs/decisions.md, "A quote by the facts its
// process kept"): a later quote of the same client and pair is priced and judged by the client's
// standing and the pair's facts the process kept, in one statement that reads the rows again and
// stores the quote only when they still hold them, the price is fresh by the statement's clock and
// the client's funds cover the quote. Whatever changed since (in another process, by an operator,
// by the clock), the quote is answered as a process that reads the rows answers it, by the facts
// that statement read (no statement of their own), and a refusal writes nothing.

import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import type { FastifyInstance, LightMyRequestResponse } from "fastify";
import {
  adminPut,
  assertAnswer,
  type CountedProcess,
  fundedClient,
  moveAed,
  nextMs,
  type SignedPost,
  signedPost,
  startCountedProcess,
} from "../../testing/counted-process.ts";
import { partnerRowCount } from "../../testing/fixtures.ts";
import { startTestContext, type TestContext, type TestPartner } from "../../testing/harness.ts";
import { clientBalances } from "../ledger/index.ts";
import { KeptQuoteFacts } from "./kept-quote-facts.ts";
import type { TradingPair } from "./trading-store.ts";

describe("quote facts kept by the process that read them", () => {
  let ctx: TestContext;
  let counted: CountedProcess;
  /** The process that keeps the facts it reads; changes are made elsewhere. */
  let second: FastifyInstance;
  /** BTC-AED as the catalog holds it at the start: each test puts back what it changes. */
  let pairAtStart: { min_volume: string; max_volume: string; lifetime_s: number; fee_rate: string };

  const setPrice = async (buy: string, at?: string) => {
    const res = await ctx.adminRequest("PUT", "/admin/pairs/BTC-AED/price", {
      buy,
      sell: "349000",
      ...(at === undefined ? {} : { at }),
      reason: "test set-up",
    });
    assert.equal(res.statusCode, 200, res.body);
  };

  before(async () => {
    ctx = await startTestContext();
    counted = await startCountedProcess(ctx);
    second = counted.app;
    await setPrice("350000");
    pairAtStart = await ctx.services.database.db
      .selectFrom("asset_pairs")
      .select((eb) => [
        eb.cast<string>("min_volume", "text").as("min_volume"),
        eb.cast<string>("max_volume", "text").as("max_volume"),
        "lifetime_s",
        eb.cast<string>("fee_rate", "text").as("fee_rate"),
      ])
      .where("id", "=", "BTC-AED")
      .executeTakeFirstOrThrow();
  });
  after(async () => {
    await counted.close();
    await ctx.close();
  });

  const quote = (partner: TestPartner, baseAmount = "0.01"): SignedPost => ({
    url: "/v1/partner/quotes",
    body: { partner_client_id: "client-1", asset_pair: "BTC-AED", side: "buy", base_amount: baseAmount },
    partner,
    atMs: nextMs(ctx),
  });

  /** What a quote may change: the partner's quotes; and what it must not: orders and balances. */
  async function state(partnerId: string, clientId: number) {
    const db = ctx.services.database.db;
    const count = (table: "orders" | "quotes") => partnerRowCount(db, table, partnerId);
    const balances = Object.fromEntries(
      [...(await clientBalances(db, clientId))].map(([asset, b]) => [asset, b.balance]),
    );
    return { quotes: await count("quotes"), orders: await count("orders"), balances };
  }

  /** The body without the token, which is random: what two processes' answers share. */
  const withoutToken = (res: LightMyRequestResponse) => {
    const body = res.json() as { result?: { token?: unknown } };
    if (body.result !== undefined) body.result.token = "(random)";
    return body;
  };

  /**
   * The quote's answer through `second`: a refusal wrote nothing, a success one quote; and the
   * answer is the one a process that reads the rows (a new one, which has kept nothing) gives.
   */
  async function answered(partner: TestPartner, clientId: number, baseAmount = "0.01") {
    const before = await state(partner.id, clientId);
    const res = await signedPost(second, quote(partner, baseAmount));
    const after = await state(partner.id, clientId);
    if (res.statusCode !== 200) assert.deepEqual(after, before, `refused (${res.body}): nothing written`);
    else assert.deepEqual(after, { ...before, quotes: before.quotes + 1 }, "one quote, nothing else");
    const fresh = await startCountedProcess(ctx);
    try {
      const read = await signedPost(fresh.app, quote(partner, baseAmount));
      assert.equal(res.statusCode, read.statusCode, `as read: ${read.body}`);
      assert.deepEqual(withoutToken(res), withoutToken(read), "the answer of a process that reads the rows");
    } finally {
      await fresh.close();
    }
    return res;
  }

  /** How `second` judged its quotes so far (counterpart_kept_facts_total). */
  const judged = () => counted.outcomes("quote");

  const admin = (url: string, body: unknown) => adminPut(ctx, url, body);

  test("a client's first quote of a pair in a process costs two statements, the next one, each priced as a read would", async () => {
    const { partner, clientId } = await fundedClient(ctx, second, "one-statement");
    const counts = await judged();
    counted.statements.count = 0;
    const first = await answered(partner, clientId);
    assert.equal(first.statusCode, 200, first.body);
    assert.equal(counted.statements.count, 2, "nothing kept: the facts read first");
    for (let i = 0; i < 3; i++) {
      counted.statements.count = 0;
      const next = await answered(partner, clientId);
      assert.equal(next.statusCode, 200, next.body);
      assert.equal(counted.statements.count, 1, "kept: the quote's statement alone");
    }
    assert.deepEqual(
      await judged(),
      { ...counts, read: counts.read + 1, kept: counts.kept + 3 },
      "on /metrics",
    );
    const rows = await ctx.services.database.db
      .selectFrom("quotes")
      .select([
        "price",
        "base_amount",
        "quote_amount",
        "fee",
        "vat",
        "vat_percentage",
        "created_at",
        "expires_at",
      ])
      .where("partner_id", "=", partner.id)
      .orderBy("id")
      .execute();
    const [read, ...kept] = rows.map(({ created_at, expires_at, ...terms }) => ({
      ...terms,
      lifetimeMs: new Date(expires_at).getTime() - new Date(created_at).getTime(),
    }));
    assert.equal(kept.length, 7, "one quote per answer, the reading processes' included");
    for (const row of kept) assert.deepEqual(row, read, "stored as the quote read from the rows");
  });

  test("whatever changed since the facts were kept, the quote is answered as the rows say, and a refusal writes nothing", async () => {
    const { partner, clientId } = await fundedClient(ctx, second, "changed");
    const clientUrl = `/admin/partners/${partner.id}/clients/client-1`;
    const partnerPair = `/admin/partners/${partner.id}/pairs/BTC-AED`;
    const fees = `/admin/partners/${partner.id}/fees`;
    const now = (ageMs: number) => new Date(ctx.clock.nowMs() + 1 - ageMs).toISOString();
    // What changes, how, the answer then (HTTP status, and the code of a refusal), and the change undone.
    const cases: [string, () => Promise<unknown>, number, number | null, () => Promise<unknown>][] = [
      [
        "the client's status",
        () => admin(`${clientUrl}/status`, { status: "under_review", reason: "test" }),
        400,
        2009,
        () => admin(`${clientUrl}/status`, { status: "verified", reason: "test" }),
      ],
      [
        "the client's standing",
        () => admin(`${clientUrl}/active`, { active: false, reason: "test" }),
        400,
        2010,
        () => admin(`${clientUrl}/active`, { active: true, reason: "test" }),
      ],
      [
        "the pair withheld from the partner",
        () => admin(partnerPair, { available: false }),
        400,
        2013,
        () => admin(partnerPair, { available: true }),
      ],
      [
        "the pair not tradable",
        () => admin("/admin/pairs/BTC-AED", { tradable: false }),
        400,
        4000,
        () => admin("/admin/pairs/BTC-AED", { tradable: true }),
      ],
      ["the price", () => setPrice("351000"), 200, null, () => setPrice("350000")],
      [
        "the price stale by the clock",
        async () => ctx.clock.advance(61_000),
        400,
        4001,
        () => setPrice("350000"),
      ],
      ["the price's tick stale", () => setPrice("350000", now(60_001)), 400, 4001, () => setPrice("350000")],
      [
        "the minimum",
        () => admin("/admin/pairs/BTC-AED", { min_volume: "0.02" }),
        400,
        4004,
        () => admin("/admin/pairs/BTC-AED", { min_volume: pairAtStart.min_volume }),
      ],
      [
        "the maximum",
        () => admin("/admin/pairs/BTC-AED", { max_volume: "0.005" }),
        400,
        4003,
        () => admin("/admin/pairs/BTC-AED", { max_volume: pairAtStart.max_volume }),
      ],
      [
        "the quotes' lifetime",
        () => admin("/admin/pairs/BTC-AED", { lifetime_s: 30 }),
        200,
        null,
        () => admin("/admin/pairs/BTC-AED", { lifetime_s: pairAtStart.lifetime_s }),
      ],
      [
        "the pair's fee rate",
        () => admin("/admin/pairs/BTC-AED", { fee_rate: "0.003" }),
        200,
        null,
        () => admin("/admin/pairs/BTC-AED", { fee_rate: pairAtStart.fee_rate }),
      ],
      [
        "the partner's fee rate",
        () => admin(fees, { fee_rate: "0.01" }),
        200,
        null,
        () => admin(fees, { fee_rate: null }),
      ],
      [
        "the partner's fee rate for the pair",
        () => admin(partnerPair, { fee_rate: "0.002" }),
        200,
        null,
        () => admin(partnerPair, { fee_rate: null }),
      ],
      [
        "the partner's VAT",
        () => admin(fees, { vat_percentage: "5" }),
        200,
        null,
        () => admin(fees, { vat_percentage: null }),
      ],
    ];
    for (const [what, change, status, code, undo] of cases) {
      const warm = await signedPost(second, quote(partner));
      assert.equal(warm.statusCode, 200, `${what}, before: ${warm.body}`);
      await change();
      const counts = await judged();
      counted.statements.count = 0;
      const res = await answered(partner, clientId);
      if (code === null) assert.equal(res.statusCode, status, `${what}: ${res.body}`);
      else assertAnswer(res, status, code, what);
      // The kept facts' statement, which stored nothing and read the facts; then the quote's own
      // statement, or for a refusal the credentials' (a refusal records no signature).
      assert.equal(counted.statements.count, 2, `${what}: the facts read by the kept facts' statement`);
      assert.deepEqual(await judged(), { ...counts, changed: counts.changed + 1 }, `${what}: on /metrics`);
      await undo();
      counted.statements.count = 0;
      const again = await signedPost(second, quote(partner));
      assert.equal(again.statusCode, 200, `${what} undone: ${again.body}`);
      // Undone: the facts kept after the change (or none, when it refused the client or the pair)
      // no longer hold, so the quote is judged by the facts read, then stored.
      assert.equal(counted.statements.count, 2, `${what} undone`);
      counted.statements.count = 0;
      const kept = await signedPost(second, quote(partner));
      assert.equal(kept.statusCode, 200, `${what} undone, again: ${kept.body}`);
      assert.equal(counted.statements.count, 1, `${what} undone: the facts kept again`);
    }
  });

  test("funds gone since the facts were kept: 3005 with the quote, as the rows say, nothing written", async () => {
    const { partner, clientId } = await fundedClient(ctx, second, "funds-gone", "5000");
    const warm = await signedPost(second, quote(partner));
    assert.equal(warm.statusCode, 200, warm.body);
    await moveAed(ctx, ctx.app, partner, "withdrawals", "4000", "funds-gone-w");
    const counts = await judged();
    const res = await answered(partner, clientId);
    assertAnswer(res, 400, 3005, "funds gone");
    assert.equal((res.json() as { msg_detail: { quote: { token: unknown } } }).msg_detail.quote.token, null);
    assert.deepEqual(await judged(), { ...counts, changed: counts.changed + 1 }, "on /metrics");
    // The pair and the client are still as kept: a smaller quote the funds cover costs one statement.
    counted.statements.count = 0;
    const smaller = await answered(partner, clientId, "0.001");
    assert.equal(smaller.statusCode, 200, smaller.body);
    assert.equal(counted.statements.count, 1, "kept");
  });

  test("a quote by kept facts, found changed or not, records its signature once: a replay is 401 in either process and writes nothing", async () => {
    const { partner, clientId } = await fundedClient(ctx, second, "replayed");
    const signatures = () => partnerRowCount(ctx.services.database.db, "used_signatures", partner.id);
    const warm = await signedPost(second, quote(partner));
    assert.equal(warm.statusCode, 200, warm.body);
    for (const [what, change] of [
      ["kept, unchanged", async () => {}],
      ["kept, the price changed", () => setPrice("351000")],
    ] as const) {
      await change();
      const request = quote(partner);
      const before = { state: await state(partner.id, clientId), signatures: await signatures() };
      const res = await signedPost(second, request);
      assert.equal(res.statusCode, 200, `${what}: ${res.body}`);
      const after = { state: await state(partner.id, clientId), signatures: await signatures() };
      assert.deepEqual(
        after,
        { state: { ...before.state, quotes: before.state.quotes + 1 }, signatures: before.signatures + 1 },
        `${what}: one quote, one signature recorded`,
      );
      for (const app of [ctx.app, second])
        assertAnswer(await signedPost(app, request), 401, 401, `${what}: replayed`);
      assert.deepEqual(
        { state: await state(partner.id, clientId), signatures: await signatures() },
        after,
        `${what}: the replays wrote nothing`,
      );
    }
    await setPrice("350000");
  });

  test("a quote the kept facts would refuse is judged by the rows, and the refusal writes nothing", async () => {
    const { partner, clientId } = await fundedClient(ctx, second, "refused");
    const warm = await signedPost(second, quote(partner));
    assert.equal(warm.statusCode, 200, warm.body);
    // More than the funds is not among them: the funds are not kept, the statement checks them.
    const cases: [string, string, number][] = [["above the maximum", "1000000", 4003]];
    for (const [what, amount, code] of cases) {
      const counts = await judged();
      counted.statements.count = 0;
      const res = await answered(partner, clientId, amount);
      assertAnswer(res, 400, code, what);
      // The facts read, and the partner's credentials, which a refusal records nothing with.
      assert.equal(counted.statements.count, 2, `${what}: no quote's statement`);
      assert.deepEqual(await judged(), { ...counts, read: counts.read + 1 }, `${what}: on /metrics`);
    }
  });
});

describe("KeptQuoteFacts", () => {
  const partnerId = "00000000-0000-4000-8000-000000000001";
  const client = (n: number) => ({ id: n, partner_client_id: `c-${n}`, status: "verified", active: true });
  const pair = (id: string): TradingPair => ({
    id,
    base_id: "BTC",
    quote_id: "AED",
    base_decimals: 8,
    quote_decimals: 2,
    buy: 35_000_000_000_000n,
    sell: 34_900_000_000_000n,
    tradable: true,
    min_volume: 0n,
    max_volume: 1_000_000_000n,
    lifetime_s: 15,
    fee_rate: 500_000n,
    vat_percentage: null,
    stale: false,
  });
  const kept = (n: number, pairId: string) => {
    const { stale: _stale, ...p } = pair(pairId);
    return { client: client(n), pair: p };
  };

  test("keeps at most its bound of clients and of pairs, the oldest going first, and forgets on demand", () => {
    const facts = new KeptQuoteFacts(2);
    facts.keep(partnerId, "c-1", client(1), pair("P-1"));
    facts.keep(partnerId, "c-2", client(2), pair("P-2"));
    facts.keep(partnerId, "c-3", client(3), pair("P-3"));
    assert.deepEqual(facts.size, { clients: 2, pairs: 2 });
    assert.equal(facts.get(partnerId, "c-1", "P-3"), undefined, "the oldest client went");
    assert.equal(facts.get(partnerId, "c-3", "P-1"), undefined, "the oldest pair went");
    assert.deepEqual(facts.get(partnerId, "c-2", "P-3"), { client: client(2), pair: kept(2, "P-3").pair });
    assert.equal(
      facts.get("00000000-0000-4000-8000-000000000002", "c-2", "P-3"),
      undefined,
      "another partner",
    );
    facts.forget(partnerId, "c-3", "P-3");
    assert.equal(facts.get(partnerId, "c-2", "P-3"), undefined);
    assert.deepEqual(facts.size, { clients: 1, pairs: 1 });
    assert.throws(() => new KeptQuoteFacts(0));
  });

  test("what is kept is a copy, without the staleness: changing the objects given changes nothing kept", () => {
    const facts = new KeptQuoteFacts(10);
    const c = client(1);
    const p = pair("P-1");
    facts.keep(partnerId, "c-1", c, p);
    c.status = "rejected";
    p.buy = 1n;
    p.stale = true;
    assert.deepEqual(facts.get(partnerId, "c-1", "P-1"), kept(1, "P-1"));
  });
});
