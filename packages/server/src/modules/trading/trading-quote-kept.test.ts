// Quotes kept by the process that made them (docs/decisions.md, "An execute by the quote its process
// kept"): the execute of such a quote, for the same partner's client, is judged by the quote's terms
// and the client's facts the process kept, its order's statement checking that the client's row
// still holds them and spending the quote only with its own terms. Whatever changed since (in
// another process, by an operator, by the clock), the execute is answered as if it had read the
// rows, and a refusal writes nothing.

import assert from "node:assert/strict";
import crypto from "node:crypto";
import { after, before, describe, test } from "node:test";
import type { FastifyInstance, LightMyRequestResponse } from "fastify";
import {
  adminPut,
  assertAnswer,
  type CountedProcess,
  fundedClient,
  moveAed,
  nextMs,
  pinBtcAed,
  type SignedPost,
  signedPost,
  startCountedProcess,
} from "../../testing/counted-process.ts";
import { insertClient, partnerRowCount } from "../../testing/fixtures.ts";
import { startTestContext, type TestContext, type TestPartner } from "../../testing/harness.ts";
import { checkLedger, clientBalances } from "../ledger/index.ts";
import { KeptQuotes } from "./kept-quotes.ts";
import { tradeLegs } from "./trade-legs.ts";
import { executeQuote, findExecutionFacts, type QuoteTerms } from "./trading-store.ts";

describe("quotes kept by the process that made them", () => {
  let ctx: TestContext;
  let counted: CountedProcess;
  /** The process that keeps the quotes it makes; changes are made elsewhere. */
  let second: FastifyInstance;

  before(async () => {
    ctx = await startTestContext();
    counted = await startCountedProcess(ctx);
    second = counted.app;
    await pinBtcAed(ctx);
  });
  after(async () => {
    await counted.close();
    await ctx.close();
  });

  const quote = (partner: TestPartner, client = "client-1"): SignedPost => ({
    url: "/v1/partner/quotes",
    body: { partner_client_id: client, asset_pair: "BTC-AED", side: "buy", base_amount: "0.01" },
    partner,
    atMs: nextMs(ctx),
  });
  const execute = (partner: TestPartner, token: string, ref: string, client = "client-1"): SignedPost => ({
    url: "/v1/partner/quotes/execute",
    body: { partner_client_id: client, token, partner_order_ref: ref },
    partner,
    atMs: nextMs(ctx),
  });

  function tokenOf(res: LightMyRequestResponse): string {
    assert.equal(res.statusCode, 200, res.body);
    return (res.json() as { result: { token: string } }).result.token;
  }

  /** What an execute may change: the partner's orders, its spent quotes, the client's balances. */
  async function state(partnerId: string, clientId: number) {
    const db = ctx.services.database.db;
    const count = (table: "orders" | "quotes", spentOnly: boolean) =>
      partnerRowCount(db, table, partnerId, spentOnly);
    const balances = Object.fromEntries(
      [...(await clientBalances(db, clientId))].map(([asset, b]) => [asset, b.balance]),
    );
    return { orders: await count("orders", false), spent: await count("quotes", true), balances };
  }

  /** The execute's answer through `app`; a refusal changed nothing, a success made one order. */
  async function answered(app: FastifyInstance, request: SignedPost, partnerId: string, clientId: number) {
    const before = await state(partnerId, clientId);
    const res = await signedPost(app, request);
    const after = await state(partnerId, clientId);
    if (res.statusCode !== 200) assert.deepEqual(after, before, `refused (${res.body}): nothing written`);
    else {
      assert.equal(after.orders, before.orders + 1, "one order");
      assert.equal(after.spent, before.spent + 1, "the quote spent");
    }
    return res;
  }

  /** How `second` judged its executes so far (counterpart_kept_facts_total). */
  const judged = () => counted.outcomes("execute");

  const admin = (url: string, body: unknown) => adminPut(ctx, url, body);

  test("the execute of a quote its process made costs one statement; of another process's quote, two", async () => {
    const { partner, clientId } = await fundedClient(ctx, second, "one-statement");
    const before = await state(partner.id, clientId);
    const token = tokenOf(await signedPost(second, quote(partner)));
    const counts = await judged();
    counted.statements.count = 0;
    const res = await answered(second, execute(partner, token, "one-1"), partner.id, clientId);
    assert.equal(res.statusCode, 200, res.body);
    assert.equal((res.json() as { result: { status: string } }).result.status, "completed");
    assert.equal(counted.statements.count, 1, "kept");
    const after = await state(partner.id, clientId);
    assert.equal(after.balances.BTC, (before.balances.BTC ?? 0n) + 1_000_000n, "0.01 BTC bought");
    assert.ok((after.balances.AED ?? 0n) < (before.balances.AED ?? 0n), "AED paid");

    const elsewhere = tokenOf(await signedPost(ctx.app, quote(partner)));
    counted.statements.count = 0;
    const read = await answered(second, execute(partner, elsewhere, "one-2"), partner.id, clientId);
    assert.equal(read.statusCode, 200, read.body);
    assert.equal(counted.statements.count, 2, "made by another process: the quote read first");
    assert.deepEqual(
      await judged(),
      { ...counts, kept: counts.kept + 1, read: counts.read + 1 },
      "on /metrics",
    );
    assert.deepEqual(await checkLedger(ctx.services.database.db), []);
  });

  test("the client's status or standing changed since the quote: refused as the row says, nothing written; restored, the quote executes", async () => {
    const { partner, clientId } = await fundedClient(ctx, second, "client-changed");
    const base = `/admin/partners/${partner.id}/clients/client-1`;
    const cases: [string, unknown, number, unknown][] = [
      ["status", { status: "under_review", reason: "test" }, 2009, { status: "verified", reason: "test" }],
      ["active", { active: false, reason: "test" }, 2010, { active: true, reason: "test" }],
    ];
    let n = 0;
    for (const [what, change, code, restore] of cases) {
      const token = tokenOf(await signedPost(second, quote(partner)));
      await admin(`${base}/${what}`, change);
      const counts = await judged();
      const res = await answered(
        second,
        execute(partner, token, `client-changed-${n++}`),
        partner.id,
        clientId,
      );
      assertAnswer(res, 400, code, `${what} changed`);
      assert.deepEqual(await judged(), { ...counts, changed: counts.changed + 1 }, `${what}: on /metrics`);
      await admin(`${base}/${what}`, restore);
      const again = await answered(
        second,
        execute(partner, token, `client-changed-${n++}`),
        partner.id,
        clientId,
      );
      assert.equal(again.statusCode, 200, `${what} restored: ${again.body}`);
    }
    assert.deepEqual(await checkLedger(ctx.services.database.db), []);
  });

  test("a reference already taken, and the client deactivated since the quote: 2020 first, as when the rows are read", async () => {
    const { partner, clientId } = await fundedClient(ctx, second, "ref-first");
    const token = tokenOf(await signedPost(second, quote(partner)));
    await admin(`/admin/partners/${partner.id}/clients/client-1/active`, { active: false, reason: "test" });
    const taken = await answered(second, execute(partner, token, "ref-first-fund"), partner.id, clientId);
    assertAnswer(taken, 409, 2020, "a reference taken comes first");
    const fresh = await answered(second, execute(partner, token, "ref-first-new"), partner.id, clientId);
    assertAnswer(fresh, 400, 2010, "a new reference: the client's standing");
  });

  test("a reference already taken, the client unchanged: 2020, and the quote still executes once", async () => {
    const { partner, clientId } = await fundedClient(ctx, second, "ref-taken");
    const token = tokenOf(await signedPost(second, quote(partner)));
    const taken = await answered(second, execute(partner, token, "ref-taken-fund"), partner.id, clientId);
    assertAnswer(taken, 409, 2020, "the funding's reference");
    counted.statements.count = 0;
    const res = await answered(second, execute(partner, token, "ref-taken-1"), partner.id, clientId);
    assert.equal(res.statusCode, 200, res.body);
    assert.equal(counted.statements.count, 1, "still kept: the token was not spent");
    const twice = await answered(second, execute(partner, token, "ref-taken-2"), partner.id, clientId);
    assertAnswer(twice, 400, 4008, "spent");
  });

  test("a kept quote spent through another process, or expired: 4008, nothing written", async () => {
    const { partner, clientId } = await fundedClient(ctx, second, "unspendable");
    const spentElsewhere = tokenOf(await signedPost(second, quote(partner)));
    const first = await answered(
      ctx.app,
      execute(partner, spentElsewhere, "unspendable-1"),
      partner.id,
      clientId,
    );
    assert.equal(first.statusCode, 200, first.body);
    const again = await answered(
      second,
      execute(partner, spentElsewhere, "unspendable-2"),
      partner.id,
      clientId,
    );
    assertAnswer(again, 400, 4008, "spent through the other process");

    const expiring = tokenOf(await signedPost(second, quote(partner)));
    ctx.clock.advance(15_000);
    const late = await answered(second, execute(partner, expiring, "unspendable-3"), partner.id, clientId);
    assertAnswer(late, 400, 4008, "expired (BTC-AED quotes live 15 s)");
  });

  test("a kept quote's token sent for another client or by another partner: 4008; its own client's execute still costs one statement", async () => {
    const { partner, clientId } = await fundedClient(ctx, second, "other-client");
    await insertClient(ctx.services.database.db, partner.id, 2);
    const other = await ctx.addPartner({ name: "other-client-partner" });
    const otherClient = await insertClient(ctx.services.database.db, other.id, 1);
    const token = tokenOf(await signedPost(second, quote(partner)));
    const before = await state(partner.id, clientId);
    const wrongClient = await answered(
      second,
      execute(partner, token, "other-client-1", "client-2"),
      partner.id,
      clientId,
    );
    assertAnswer(wrongClient, 400, 4008, "another client of the partner");
    const wrongPartner = await answered(
      second,
      execute(other, token, "other-client-2"),
      other.id,
      otherClient.id,
    );
    assertAnswer(wrongPartner, 400, 4008, "another partner");
    assert.deepEqual(await state(partner.id, clientId), before, "the quote's partner: nothing written");
    counted.statements.count = 0;
    const own = await answered(second, execute(partner, token, "other-client-3"), partner.id, clientId);
    assert.equal(own.statusCode, 200, own.body);
    assert.equal(counted.statements.count, 1, "its own client's execute, kept");
  });

  test("funds gone since a kept quote: the order rejected, the quote spent, nothing posted", async () => {
    const { partner, clientId } = await fundedClient(ctx, second, "funds-gone", "5000");
    const token = tokenOf(await signedPost(second, quote(partner)));
    await moveAed(ctx, second, partner, "withdrawals", "4000", "funds-gone-w");
    const before = await state(partner.id, clientId);
    counted.statements.count = 0;
    const res = await signedPost(second, execute(partner, token, "funds-gone-1"));
    assert.equal(res.statusCode, 200, res.body);
    assert.equal((res.json() as { result: { status: string } }).result.status, "rejected");
    assert.equal(counted.statements.count, 1);
    assert.deepEqual(await state(partner.id, clientId), {
      orders: before.orders + 1,
      spent: before.spent + 1,
      balances: before.balances,
    });
    assert.deepEqual(await checkLedger(ctx.services.database.db), []);
  });

  test("execute_quote() spends a quote only with its own terms: any other is a check violation and writes nothing", async () => {
    const { partner, clientId } = await fundedClient(ctx, second, "terms");
    const db = ctx.services.database.db;
    const token = tokenOf(await signedPost(ctx.app, quote(partner)));
    const tokenHash = crypto.hash("sha256", token, "buffer");
    const facts = await findExecutionFacts(db, partner.id, "client-1", tokenHash, ctx.clock);
    assert.ok(facts.quote !== undefined, "the quote is spendable");
    const { id: _id, ...terms } = facts.quote;
    const run = (t: QuoteTerms) => {
      const { slot, legs } = tradeLegs({
        clientId,
        side: t.side,
        baseId: t.base_id,
        quoteId: t.quote_id,
        baseAmount: t.base_amount,
        quoteAmount: t.quote_amount,
        fee: t.fee,
        vat: t.vat,
      });
      const execution = {
        partnerId: partner.id,
        clientId,
        ref: null,
        tokenHash,
        clock: ctx.clock,
        quote: t,
        legs,
        slot,
      };
      return executeQuote(db, execution);
    };
    const wrong: [string, QuoteTerms][] = [
      ["the price", { ...terms, price: terms.price + 1n }],
      ["the base amount", { ...terms, base_amount: terms.base_amount - 1n }],
      ["the quote amount", { ...terms, quote_amount: terms.quote_amount - 1n }],
      ["the fee", { ...terms, fee: terms.fee + 1n }],
      ["the VAT", { ...terms, vat: terms.vat + 1n }],
      ["the side", { ...terms, side: "sell" }],
      ["the base asset", { ...terms, base_id: "ETH" }],
    ];
    const before = await state(partner.id, clientId);
    for (const [what, t] of wrong) {
      await assert.rejects(run(t), (err: { code?: string }) => err.code === "23514", what);
      assert.deepEqual(await state(partner.id, clientId), before, `${what}: nothing written`);
    }
    const order = await run(terms);
    assert.equal(order.status, "completed", "its own terms spend it");
    assert.deepEqual(await checkLedger(db), []);
  });
});

describe("KeptQuotes", () => {
  const hash = (n: number) => crypto.hash("sha256", `qt_${n}`, "buffer");
  const kept = (n: number) => ({
    partnerId: "00000000-0000-4000-8000-000000000001",
    client: { id: n, partner_client_id: `c-${n}`, status: "verified", active: true },
    terms: {
      pair_id: "BTC-AED",
      base_id: "BTC",
      quote_id: "AED",
      side: "buy" as const,
      price: 35_000_000_000_000n,
      base_amount: 1_000_000n,
      quote_amount: 350_000_000_000n,
      fee: 0n,
      vat: 0n,
    },
  });

  test("keeps at most its bound, the oldest going first, and forgets on demand", () => {
    const quotes = new KeptQuotes(2);
    quotes.keep(hash(1), kept(1));
    quotes.keep(hash(2), kept(2));
    quotes.keep(hash(3), kept(3));
    assert.equal(quotes.size, 2);
    assert.equal(quotes.get(hash(1)), undefined, "the oldest went");
    assert.deepEqual(quotes.get(hash(3)), kept(3));
    quotes.forget(hash(3));
    assert.equal(quotes.get(hash(3)), undefined);
    assert.equal(quotes.size, 1);
    assert.throws(() => new KeptQuotes(0));
  });

  test("what is kept is a copy: changing the object given changes nothing kept", () => {
    const quotes = new KeptQuotes(10);
    const given = kept(1);
    quotes.keep(hash(1), given);
    given.client.status = "rejected";
    given.terms.price = 1n;
    assert.deepEqual(quotes.get(hash(1)), kept(1));
  });
});
