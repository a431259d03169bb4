// A quote or an execute whose signature its change's statement records (docs/decisions.md, "A signed
// write recorded in its change's statement"): with the credentials its process kept, a quote costs
// two statements and the execute of a quote its process kept one; a replay is a 401 that changes nothing, whatever the first request's outcome; a key
// retired since the process kept it stores no quote and spends no token; identical executes at once
// make one order; a connection lost after the execute committed keeps its 503.

import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { generateKeyPair } from "@counterpart/protocol";
import type { FastifyInstance, LightMyRequestResponse } from "fastify";
import {
  assertAnswer,
  type CountedProcess,
  fundedClient,
  LostAfterCommit,
  nextMs,
  pinBtcAed,
  type SignedPost,
  signedPost,
  startCountedProcess,
} from "../../testing/counted-process.ts";
import { partnerRowCount } from "../../testing/fixtures.ts";
import { startTestContext, type TestContext, testNote } from "../../testing/harness.ts";
import { checkLedger, clientBalances } from "../ledger/index.ts";

describe("a quote or an execute recorded in its change's statement", () => {
  let ctx: TestContext;
  let counted: CountedProcess;
  /** The process that did not make the changes below: it keeps credentials the row may no longer hold. */
  let second: FastifyInstance;
  const lost = new LostAfterCommit("record_signature");

  before(async () => {
    ctx = await startTestContext();
    counted = await startCountedProcess(ctx, [lost]);
    second = counted.app;
    await pinBtcAed(ctx);
  });
  after(async () => {
    await counted.close();
    await ctx.close();
  });

  const now = () => nextMs(ctx);

  const quote = (baseAmount = "0.01") => ({
    url: "/v1/partner/quotes",
    body: { partner_client_id: "client-1", asset_pair: "BTC-AED", side: "buy", base_amount: baseAmount },
  });
  const execute = (token: string, ref: string | null = null) => ({
    url: "/v1/partner/quotes/execute",
    body: { partner_client_id: "client-1", token, ...(ref === null ? {} : { partner_order_ref: ref }) },
  });

  /** What a request may change: quotes, spent quotes, orders, recorded signatures, balances. */
  async function state(partnerId: string, clientId: number) {
    const db = ctx.services.database.db;
    const count = (table: "orders" | "used_signatures" | "quotes") => partnerRowCount(db, table, partnerId);
    const balances = await clientBalances(db, clientId);
    return {
      quotes: await count("quotes"),
      spent: await partnerRowCount(db, "quotes", partnerId, true),
      orders: await count("orders"),
      signatures: await count("used_signatures"),
      aed: balances.get("AED")?.balance ?? 0n,
      btc: balances.get("BTC")?.balance ?? 0n,
    };
  }

  function tokenOf(res: LightMyRequestResponse): string {
    assert.equal(res.statusCode, 200, res.body);
    return (res.json() as { result: { token: string } }).result.token;
  }

  test("with the credentials kept, a quote costs two statements and its execute one; replays are 401 and change nothing", async () => {
    const { partner, clientId } = await fundedClient(ctx, second, "two-statements");
    const before = await state(partner.id, clientId);
    const quoted: SignedPost = { ...quote(), partner, atMs: now() };
    counted.statements.count = 0;
    const token = tokenOf(await signedPost(second, quoted));
    // The pair, the client and its funds in one; the signature's record and the quote in the other.
    assert.equal(counted.statements.count, 2, "quote");
    const afterQuote = await state(partner.id, clientId);
    assert.deepEqual(afterQuote, { ...before, quotes: before.quotes + 1, signatures: before.signatures + 1 });
    assertAnswer(await signedPost(second, quoted), 401, 401, "the quote replayed");
    assertAnswer(await signedPost(ctx.app, quoted), 401, 401, "the quote replayed in the other process");
    assert.deepEqual(await state(partner.id, clientId), afterQuote, "no second quote");

    const executed: SignedPost = { ...execute(token, "two-exec"), partner, atMs: now() };
    counted.statements.count = 0;
    const order = await signedPost(second, executed);
    assert.equal(order.statusCode, 200, order.body);
    assert.equal((order.json() as { result: { status: string } }).result.status, "completed");
    // The quote and the client's facts kept by the process that made it (trading-quote-kept.test.ts).
    assert.equal(counted.statements.count, 1, "execute");
    const afterExecute = await state(partner.id, clientId);
    assert.equal(afterExecute.orders, before.orders + 1);
    assert.equal(afterExecute.spent, before.spent + 1);
    assert.equal(afterExecute.signatures, before.signatures + 2);
    assert.equal(afterExecute.btc, before.btc + 1_000_000n, "0.01 BTC bought");
    for (const app of [second, ctx.app]) {
      assertAnswer(await signedPost(app, executed), 401, 401, "the execute replayed");
    }
    assert.deepEqual(await state(partner.id, clientId), afterExecute, "a replay changes nothing");
    assert.deepEqual(await checkLedger(ctx.services.database.db), []);
  });

  test("a refused quote or execute records its signature: replayed once the cause is gone, still a 401", async () => {
    const { partner, clientId } = await fundedClient(ctx, second, "refused", "100");
    // 0.01 BTC at 350,000 AED: funds short.
    const short: SignedPost = { ...quote(), partner, atMs: now() };
    let before = await state(partner.id, clientId);
    assertAnswer(await signedPost(second, short), 400, 3005, "funds short");
    assert.deepEqual(await state(partner.id, clientId), { ...before, signatures: before.signatures + 1 });
    const funds = {
      partner_client_id: "client-1",
      asset_id: "AED",
      amount: "10000",
      partner_order_ref: "refused-2",
    };
    const funded = await signedPost(second, {
      url: "/v1/partner/deposits",
      body: funds,
      partner,
      atMs: now(),
    });
    assert.equal(funded.statusCode, 200, funded.body);
    before = await state(partner.id, clientId);
    assertAnswer(await signedPost(second, short), 401, 401, "replayed with the funds there");
    assert.deepEqual(await state(partner.id, clientId), before, "no quote stored");

    // A spent token: executed once, then again under a new signature (4008), whose replay is a 401.
    const token = tokenOf(await signedPost(second, { ...quote(), partner, atMs: now() }));
    const first = await signedPost(second, { ...execute(token), partner, atMs: now() });
    assert.equal(first.statusCode, 200, first.body);
    const again: SignedPost = { ...execute(token), partner, atMs: now() };
    before = await state(partner.id, clientId);
    assertAnswer(await signedPost(second, again), 400, 4008, "a spent token");
    assert.deepEqual(await state(partner.id, clientId), { ...before, signatures: before.signatures + 1 });
    assertAnswer(await signedPost(second, again), 401, 401, "its replay");
    assert.deepEqual(await state(partner.id, clientId), { ...before, signatures: before.signatures + 1 });
  });

  test("a key retired since the process kept it: no quote stored, no token spent, nothing recorded", async () => {
    const { partner, clientId } = await fundedClient(ctx, second, "retired");
    const token = tokenOf(await signedPost(second, { ...quote(), partner, atMs: now() }));
    const next = generateKeyPair();
    assert.ok((await ctx.services.partners.setKey(partner.id, next.publicKeyPem, testNote)).ok);
    const before = await state(partner.id, clientId);
    assertAnswer(await signedPost(second, { ...quote(), partner, atMs: now() }), 401, 401, "quote, old key");
    assertAnswer(
      await signedPost(second, { ...execute(token), partner, atMs: now() }),
      401,
      401,
      "execute, old key",
    );
    assert.deepEqual(await state(partner.id, clientId), before, "nothing changed");
    // The new key, in the process that kept the old one: judged by the row, then executed.
    const res = await signedPost(second, {
      ...execute(token),
      partner,
      atMs: now(),
      key: next.privateKeyPem,
    });
    assert.equal(res.statusCode, 200, res.body);
    const after = await state(partner.id, clientId);
    assert.deepEqual(after, {
      ...before,
      spent: before.spent + 1,
      orders: before.orders + 1,
      signatures: before.signatures + 1,
      aed: after.aed,
      btc: before.btc + 1_000_000n,
    });
  });

  test("identical executes at once, in two processes: one order, every other answer a 401", async () => {
    const { partner, clientId } = await fundedClient(ctx, second, "identical");
    const token = tokenOf(await signedPost(second, { ...quote(), partner, atMs: now() }));
    const before = await state(partner.id, clientId);
    const request: SignedPost = { ...execute(token, "identical-1"), partner, atMs: now() };
    const answers = await Promise.all(
      Array.from({ length: 12 }, (_, i) => signedPost(i % 2 === 0 ? second : ctx.app, request)),
    );
    const statuses = answers.map((r) => r.statusCode).sort();
    assert.deepEqual(statuses, [200, ...Array<number>(11).fill(401)], answers.map((r) => r.body).join("\n"));
    const after = await state(partner.id, clientId);
    assert.equal(after.orders, before.orders + 1);
    assert.equal(after.spent, before.spent + 1);
    assert.equal(after.signatures, before.signatures + 1);
    assert.equal(after.btc, before.btc + 1_000_000n);
  });

  test("a connection lost after the execute committed: a 503, the order and its record kept, a replay 401", async () => {
    const { partner, clientId } = await fundedClient(ctx, second, "lost");
    const token = tokenOf(await signedPost(second, { ...quote(), partner, atMs: now() }));
    const before = await state(partner.id, clientId);
    const request: SignedPost = { ...execute(token, "lost-1"), partner, atMs: now() };
    lost.armed = true;
    const res = await signedPost(second, request);
    assert.equal(lost.armed, false, "the statement ran");
    assertAnswer(res, 503, 503, "connection lost");
    const after = await state(partner.id, clientId);
    assert.equal(after.orders, before.orders + 1, "the order committed");
    assert.equal(after.signatures, before.signatures + 1, "with its record");
    assertAnswer(await signedPost(second, request), 401, 401, "replayed");
    assertAnswer(
      await signedPost(second, { ...request, atMs: now() }),
      409,
      2020,
      "retried under a new signature",
    );
  });
});
