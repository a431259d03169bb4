// A deposit or withdrawal whose signature its order's statement records (docs/decisions.md, "A
// signed write recorded in its change's statement"): with the credentials its process kept, it costs
// one statement and one commit (its client's and asset's facts kept too; else two, the facts read); a replay is a 401 whatever the first request's outcome; a partner
// disabled, re-keyed, moved to another allow-list or given another budget is judged by its row
// before anything is written; identical requests at once make one order; and a statement whose
// connection fails after it committed keeps its 503, never a 401 from finding its own record.

import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { generateKeyPair, signRequest } from "@counterpart/protocol";
import type { FastifyInstance } from "fastify";
import {
  assertAnswer,
  type CountedProcess,
  LostAfterCommit,
  nextMs,
  type SignedPost,
  signedPost,
  startCountedProcess,
  Unreachable,
} from "../../testing/counted-process.ts";
import { insertClient, partnerRowCount } from "../../testing/fixtures.ts";
import { startTestContext, type TestContext, testNote } from "../../testing/harness.ts";
import { checkLedger, clientBalances } from "../ledger/index.ts";

describe("a deposit or withdrawal recorded in its order's statement", () => {
  let ctx: TestContext;
  let counted: CountedProcess;
  /** The process that did not make the changes below: it keeps credentials the row may no longer hold. */
  let second: FastifyInstance;
  const lost = new LostAfterCommit("record_signature");
  const unreachable = new Unreachable();

  before(async () => {
    ctx = await startTestContext();
    counted = await startCountedProcess(ctx, [lost, unreachable]);
    second = counted.app;
  });
  after(async () => {
    await counted.close();
    await ctx.close();
  });

  const now = () => nextMs(ctx);

  const deposit = (ref: string, amount = "10", client = "client-1") => ({
    url: "/v1/partner/deposits" as const,
    body: { partner_client_id: client, asset_id: "AED", amount, partner_order_ref: ref },
  });
  const withdrawal = (ref: string, amount: string) => ({
    url: "/v1/partner/withdrawals" as const,
    body: { partner_client_id: "client-1", asset_id: "AED", amount, partner_order_ref: ref },
  });

  /** A partner with client-1, whose credentials `second` has kept (one request made there). */
  async function keptPartner(name: string, allowIps?: string[]) {
    const partner = await ctx.addPartner({ name, ...(allowIps === undefined ? {} : { allowIps }) });
    const client = await insertClient(ctx.services.database.db, partner.id, 1);
    const first = await signedPost(second, { ...deposit(`${name}-first`), partner, atMs: now() });
    assert.equal(first.statusCode, 200, first.body);
    return { partner, clientId: client.id };
  }

  /** What a request may change: the partner's orders, its recorded signatures, the client's AED. */
  async function state(partnerId: string, clientId: number) {
    const db = ctx.services.database.db;
    const count = (table: "orders" | "used_signatures") => partnerRowCount(db, table, partnerId);
    const balance = (await clientBalances(db, clientId)).get("AED")?.balance ?? 0n;
    return { orders: await count("orders"), signatures: await count("used_signatures"), balance };
  }

  test("with the credentials and the funding facts kept, an order costs one statement, and its replay is a 401 that changes nothing", async () => {
    const { partner, clientId } = await keptPartner("two-statements");
    for (const request of [deposit("two-1"), withdrawal("two-2", "3")]) {
      const before = await state(partner.id, clientId);
      const atMs = now();
      counted.statements.count = 0;
      const res = await signedPost(second, { ...request, partner, atMs });
      assert.equal(res.statusCode, 200, res.body);
      // The signature's record, the client's and the asset's facts witnessed, and the order, in
      // one statement (keptPartner's deposit had the process keep client-1's and AED's facts).
      assert.equal(counted.statements.count, 1, request.url);
      const after = await state(partner.id, clientId);
      assert.equal(after.orders, before.orders + 1);
      assert.equal(after.signatures, before.signatures + 1, "recorded with the order");

      for (const app of [second, ctx.app]) {
        assertAnswer(
          await signedPost(app, { ...request, partner, atMs }),
          401,
          401,
          `${request.url} replayed`,
        );
      }
      assert.deepEqual(await state(partner.id, clientId), after, "a replay changes nothing");
    }
    assert.deepEqual(await checkLedger(ctx.services.database.db), []);
  });

  test("a refused order records its signature before it answers: replayed once the cause is gone, still a 401", async () => {
    const { partner, clientId } = await keptPartner("refused");
    const refusals: [SignedPost, number, number, () => Promise<void>][] = [
      // Funds short; then the funds arrive.
      [
        { ...withdrawal("refused-w", "1000"), partner, atMs: now() },
        400,
        3005,
        async () => {
          const res = await signedPost(second, { ...deposit("refused-funds", "5000"), partner, atMs: now() });
          assert.equal(res.statusCode, 200, res.body);
        },
      ],
      // No such client; then the client is onboarded.
      [
        { ...deposit("refused-c", "10", "client-2"), partner, atMs: now() },
        400,
        2008,
        async () => {
          await insertClient(ctx.services.database.db, partner.id, 2);
        },
      ],
      // A reference taken: the answer the first time too, so nothing to change.
      [{ ...deposit("refused-first"), partner, atMs: now() }, 409, 2020, async () => {}],
      // Not an amount the contract accepts.
      [{ ...deposit("refused-a", "-1"), partner, atMs: now() }, 422, 422, async () => {}],
    ];
    for (const [request, status, code, removeCause] of refusals) {
      const before = await state(partner.id, clientId);
      assertAnswer(await signedPost(second, request), status, code, request.body.partner_order_ref as string);
      const after = await state(partner.id, clientId);
      assert.deepEqual(
        after,
        { ...before, signatures: before.signatures + 1 },
        "only the signature recorded",
      );
      await removeCause();
      const changed = await state(partner.id, clientId);
      assertAnswer(await signedPost(second, request), 401, 401, "replayed after the refusal");
      assert.deepEqual(await state(partner.id, clientId), changed, "the replay changed nothing");
    }
  });

  test("a partner disabled, re-keyed, moved or given another budget since the process kept it is judged by its row first", async () => {
    const { partner, clientId } = await keptPartner("changed", ["127.0.0.1/32", "10.9.0.0/16"]);
    const partners = ctx.services.partners;
    const refusedChangesNothing = async (request: SignedPost, why: string) => {
      const before = await state(partner.id, clientId);
      assertAnswer(await signedPost(second, request), 401, 401, why);
      assert.deepEqual(
        await state(partner.id, clientId),
        before,
        `${why}: nothing written, nothing recorded`,
      );
    };
    const accepted = async (request: SignedPost, why: string) => {
      const before = await state(partner.id, clientId);
      const res = await signedPost(second, request);
      assert.equal(res.statusCode, 200, `${why}: ${res.body}`);
      const after = await state(partner.id, clientId);
      assert.deepEqual(after, {
        orders: before.orders + 1,
        signatures: before.signatures + 1,
        balance: after.balance,
      });
      assertAnswer(await signedPost(second, request), 401, 401, `${why}, replayed`);
      assert.deepEqual(await state(partner.id, clientId), after);
    };

    assert.ok((await partners.setActive(partner.id, false, testNote)).ok);
    await refusedChangesNothing({ ...deposit("changed-1"), partner, atMs: now() }, "disabled");
    assert.ok((await partners.setActive(partner.id, true, testNote)).ok);
    await accepted({ ...deposit("changed-2"), partner, atMs: now() }, "enabled again");

    // A key added: the keys the row holds are no longer the ones kept, and the old key still signs.
    const next = generateKeyPair();
    assert.ok((await partners.addKey(partner.id, "next", next.publicKeyPem, testNote)).ok);
    await accepted({ ...deposit("changed-3"), partner, atMs: now() }, "the old key, a key added since");
    // Every key replaced by the new one: the old key no longer signs.
    assert.ok((await partners.setKey(partner.id, next.publicKeyPem, testNote)).ok);
    await refusedChangesNothing({ ...deposit("changed-4"), partner, atMs: now() }, "the old key, retired");
    await accepted({ ...deposit("changed-5"), partner, atMs: now(), key: next.privateKeyPem }, "the new key");

    assert.ok((await partners.setIps(partner.id, ["10.9.0.0/16"], testNote)).ok);
    const moved = { partner, key: next.privateKeyPem };
    await refusedChangesNothing(
      { ...deposit("changed-6"), ...moved, atMs: now() },
      "an address no longer listed",
    );
    await accepted(
      { ...deposit("changed-7"), ...moved, atMs: now(), remoteAddress: "10.9.1.1" },
      "a listed one",
    );

    // A budget of one write: taken from it before the order, though this process kept another.
    ctx.clock.advance(60_000);
    assert.ok((await partners.setRateLimits(partner.id, { writes: 1 }, testNote)).ok);
    const at = { ...moved, remoteAddress: "10.9.1.1" };
    await accepted({ ...deposit("changed-8"), ...at, atMs: now() }, "the budget's one write");
    const before = await state(partner.id, clientId);
    const over = await signedPost(second, { ...deposit("changed-9"), ...at, atMs: now() });
    assertAnswer(over, 429, 429, "over the budget the row holds");
    assert.equal(over.headers["ratelimit-limit"], "1");
    const after = await state(partner.id, clientId);
    assert.equal(after.orders, before.orders, "no order over the budget");
    assert.equal(after.balance, before.balance);
    assert.deepEqual(await checkLedger(ctx.services.database.db), []);
  });

  test("a write judged by a budget the row no longer holds is taken from the row's budget before its change", async () => {
    const { partner, clientId } = await keptPartner("retake");
    const partners = ctx.services.partners;
    const post = (ref: string) => signedPost(second, { ...deposit(ref), partner, atMs: now() });

    // Two writes a window, set behind the back of the process that kept the default: the statement
    // finds another budget, the row judges the request again, and it is taken from the row's.
    assert.ok((await partners.setRateLimits(partner.id, { writes: 2 }, testNote)).ok);
    const first = await post("retake-1");
    assert.equal(first.statusCode, 200, first.body);
    assert.equal(first.headers["ratelimit-limit"], "2", "the answer tells the row's budget");
    assert.equal(first.headers["ratelimit-remaining"], "1");
    const next = await post("retake-2");
    assert.equal(next.statusCode, 200, next.body);
    assert.equal(next.headers["ratelimit-remaining"], "0");

    // The process learns a budget of five (a request over its kept budget is judged by the row
    // first), then the row goes back to two behind its back: two are spent in this window.
    assert.ok((await partners.setRateLimits(partner.id, { writes: 5 }, testNote)).ok);
    const third = await post("retake-3");
    assert.equal(third.statusCode, 200, third.body);
    assert.equal(third.headers["ratelimit-limit"], "5");
    assert.ok((await partners.setRateLimits(partner.id, { writes: 2 }, testNote)).ok);
    const before = await state(partner.id, clientId);
    const over = await post("retake-4");
    assertAnswer(over, 429, 429, "taken from the row's spent budget before its change");
    assert.equal(over.headers["ratelimit-limit"], "2");
    assert.equal(over.headers["ratelimit-remaining"], "0");
    assert.ok(Number(over.headers["retry-after"]) > 0, "says when");
    const after = await state(partner.id, clientId);
    assert.equal(after.orders, before.orders, "no order over the row's budget");
    assert.equal(after.balance, before.balance);
    assert.deepEqual(await checkLedger(ctx.services.database.db), []);
  });

  test("identical requests at once, in two processes: one order, every other answer a 401", async () => {
    const { partner, clientId } = await keptPartner("identical");
    const before = await state(partner.id, clientId);
    const request: SignedPost = { ...deposit("identical-1", "7"), partner, atMs: now() };
    const answers = await Promise.all(
      Array.from({ length: 12 }, (_, i) => signedPost(i % 2 === 0 ? second : ctx.app, request)),
    );
    const statuses = answers.map((r) => r.statusCode).sort();
    assert.deepEqual(statuses, [200, ...Array<number>(11).fill(401)], answers.map((r) => r.body).join("\n"));
    const after = await state(partner.id, clientId);
    assert.deepEqual(after, {
      orders: before.orders + 1,
      signatures: before.signatures + 1,
      balance: before.balance + 700_000_000n,
    });
  });

  test("a connection lost after the order's statement committed: a 503, the order and its record kept, a replay 401", async () => {
    const { partner, clientId } = await keptPartner("lost");
    const before = await state(partner.id, clientId);
    const request: SignedPost = { ...deposit("lost-1", "4"), partner, atMs: now() };
    lost.armed = true;
    const res = await signedPost(second, request);
    assert.equal(lost.armed, false, "the statement ran");
    // Not a 401: the request's own record, found by judging it again, would say it was refused.
    assertAnswer(res, 503, 503, "connection lost");
    const after = await state(partner.id, clientId);
    assert.deepEqual(after, {
      orders: before.orders + 1,
      signatures: before.signatures + 1,
      balance: before.balance + 400_000_000n,
    });
    assertAnswer(await signedPost(second, request), 401, 401, "replayed");
    // The partner's retry, signed anew, learns the order exists.
    assertAnswer(await signedPost(second, { ...request, atMs: now() }), 409, 2020, "retried");
    assert.deepEqual(await state(partner.id, clientId), { ...after, signatures: after.signatures + 1 });
  });

  test("the database out of reach before the order: a 503 in the contract's words, nothing changed, for a read too", async () => {
    const { partner, clientId } = await keptPartner("unreachable");
    const before = await state(partner.id, clientId);
    const balances = "/v1/partner/balances?partner_client_id=client-1";
    const read = (url = balances) => {
      ctx.clock.advance(1);
      const headers = signRequest({
        partnerId: partner.id,
        privateKey: partner.privateKeyPem,
        method: "GET",
        target: url,
        body: "",
        nowMs: ctx.clock.nowMs(),
      });
      return second.inject({ method: "GET", url, headers, remoteAddress: "127.0.0.1" });
    };
    assert.equal((await read()).statusCode, 200);
    const unavailable = '{"code":503,"msg":"Service Unavailable","msg_detail":null}';
    unreachable.armed = true;
    try {
      // The order's statement fails (the facts are kept, so it is the first): its 503 leaves as it is.
      const res = await signedPost(second, { ...deposit("unreachable-1"), partner, atMs: now() });
      assert.equal(res.body, unavailable);
      assert.equal(res.statusCode, 503);
      assert.equal((await read()).body, unavailable);
      // Refused before any statement (422), then not settled, the row out of reach: a 503 instead.
      const bad = await signedPost(second, { ...deposit("unreachable-2", "-1"), partner, atMs: now() });
      assert.equal(bad.body, unavailable);
      assert.equal(bad.statusCode, 503);
      const badRead = await read("/v1/partner/balances");
      assert.equal(badRead.body, unavailable);
      assert.equal(badRead.statusCode, 503);
    } finally {
      unreachable.armed = false;
    }
    assert.deepEqual(await state(partner.id, clientId), before, "nothing written, nothing recorded");
    assert.equal((await read()).statusCode, 200, "back once the database answers");
  });
});
