// Funding facts kept by a process (docs/decisions.md, "Funding facts witnessed in the order's
// statement"): a process that let a client's deposit of an asset through keeps the client's and the
// asset's facts, and judges the next funding request of that client and asset by them, its order's
// statement checking that the rows still hold them. Whatever changed since (in another process, by
// an operator), the request is answered as if the facts had been read, and a refusal writes nothing.

import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import {
  adminPut,
  assertAnswer,
  type CountedProcess,
  nextMs,
  type SignedPost,
  signedPost,
  startCountedProcess,
} from "../../testing/counted-process.ts";
import { insertClient } from "../../testing/fixtures.ts";
import { startTestContext, type TestContext, type TestPartner } from "../../testing/harness.ts";
import { checkLedger, clientBalances } from "../ledger/index.ts";
import { KeptFundingFacts } from "./kept-facts.ts";

describe("funding facts kept by a process", () => {
  let ctx: TestContext;
  let counted: CountedProcess;
  /** The process that keeps the facts; changes are made elsewhere (the admin API, the database). */
  let second: CountedProcess["app"];

  before(async () => {
    ctx = await startTestContext();
    counted = await startCountedProcess(ctx);
    second = counted.app;
  });
  after(async () => {
    await counted.close();
    await ctx.close();
  });

  const post = (
    partner: TestPartner,
    kind: "deposits" | "withdrawals",
    ref: string,
    amount = "10",
    asset = "AED",
  ): SignedPost => ({
    url: `/v1/partner/${kind}`,
    body: { partner_client_id: "client-1", asset_id: asset, amount, partner_order_ref: ref },
    partner,
    atMs: nextMs(ctx),
  });

  /** A partner with client-1, one deposit of AED made through `second`, which now keeps the facts. */
  async function keptClient(name: string) {
    const partner = await ctx.addPartner({ name });
    const client = await insertClient(ctx.services.database.db, partner.id, 1);
    const first = await signedPost(second, post(partner, "deposits", `${name}-first`, "100"));
    assert.equal(first.statusCode, 200, first.body);
    return { partner, clientId: client.id };
  }

  /** What a funding request may change: the partner's orders and the client's balances. */
  async function state(partnerId: string, clientId: number) {
    const db = ctx.services.database.db;
    const orders = await db
      .selectFrom("orders")
      .select((eb) => eb.fn.countAll().as("n"))
      .where("partner_id", "=", partnerId)
      .executeTakeFirstOrThrow();
    const balances = Object.fromEntries(
      [...(await clientBalances(db, clientId))].map(([asset, b]) => [asset, b.balance]),
    );
    return { orders: Number(orders.n), balances };
  }

  /** The request's answer, the error's code when refused, and that a refusal changed nothing. */
  async function answered(request: SignedPost, partnerId: string, clientId: number) {
    const before = await state(partnerId, clientId);
    const res = await signedPost(second, request);
    const after = await state(partnerId, clientId);
    if (res.statusCode !== 200) assert.deepEqual(after, before, `refused (${res.body}): nothing written`);
    else assert.equal(after.orders, before.orders + 1, "one order");
    return res;
  }

  const admin = (url: string, body: unknown) => adminPut(ctx, url, body);

  test("with the facts kept, a deposit or a withdrawal costs one statement; a new client or asset is read first", async () => {
    const { partner } = await keptClient("one-statement");
    const deposits = async () => ({
      kept: await counted.judged("deposit", "kept"),
      read: await counted.judged("deposit", "read"),
      withdrawalsKept: await counted.judged("withdrawal", "kept"),
    });
    const counts = await deposits();
    for (const request of [post(partner, "deposits", "one-1"), post(partner, "withdrawals", "one-2", "5")]) {
      counted.statements.count = 0;
      const res = await signedPost(second, request);
      assert.equal(res.statusCode, 200, res.body);
      assert.equal(counted.statements.count, 1, request.url);
    }
    // USD for the same client: its facts are read (two statements), then kept (one).
    for (const [ref, statements] of [
      ["one-usd-1", 2],
      ["one-usd-2", 1],
    ] as const) {
      counted.statements.count = 0;
      const res = await signedPost(second, post(partner, "deposits", ref, "1", "USD"));
      assert.equal(res.statusCode, 200, res.body);
      assert.equal(counted.statements.count, statements, ref);
    }
    // On /metrics (counterpart_kept_facts_total): AED and the second USD kept, the first USD read.
    assert.deepEqual(await deposits(), {
      kept: counts.kept + 2,
      read: counts.read + 1,
      withdrawalsKept: counts.withdrawalsKept + 1,
    });
  });

  test("a client's status or standing changed since the facts were kept: refused as the row says, nothing written", async () => {
    const { partner, clientId } = await keptClient("client-changed");
    const base = `/admin/partners/${partner.id}/clients/client-1`;
    const cases: [string, unknown, number, unknown][] = [
      ["status", { status: "under_review", reason: "test" }, 2009, { status: "verified", reason: "test" }],
      ["active", { active: false, reason: "test" }, 2010, { active: true, reason: "test" }],
    ];
    let n = 0;
    for (const [what, change, code, restore] of cases) {
      await admin(`${base}/${what}`, change);
      const changed = await counted.judged("deposit", "changed");
      for (const kind of ["deposits", "withdrawals"] as const) {
        const res = await answered(post(partner, kind, `client-changed-${n++}`, "1"), partner.id, clientId);
        assertAnswer(res, 400, code, `${what} changed, ${kind}`);
      }
      // The deposit found the kept facts changed; the withdrawal, with nothing kept any more, read.
      assert.equal(await counted.judged("deposit", "changed"), changed + 1, `${what}: on /metrics`);
      await admin(`${base}/${what}`, restore);
      const res = await answered(
        post(partner, "deposits", `client-changed-${n++}`, "1"),
        partner.id,
        clientId,
      );
      assert.equal(res.statusCode, 200, `${what} restored: ${res.body}`);
    }
    assert.deepEqual(await checkLedger(ctx.services.database.db), []);
  });

  test("an asset unpublished, or no longer depositable or withdrawable, since the facts were kept: 2012, nothing written", async () => {
    const { partner, clientId } = await keptClient("asset-changed");
    const cases: [string, Record<string, boolean>, "deposits" | "withdrawals"][] = [
      ["unpublished", { published: false }, "deposits"],
      ["not depositable", { depositable: false }, "deposits"],
      ["not withdrawable", { withdrawable: false }, "withdrawals"],
    ];
    let n = 0;
    try {
      for (const [why, change, kind] of cases) {
        // Kept again (a request let through), then changed.
        const kept = await answered(post(partner, kind, `asset-changed-${n++}`, "1"), partner.id, clientId);
        assert.equal(kept.statusCode, 200, kept.body);
        await admin("/admin/assets/AED", change);
        const res = await answered(post(partner, kind, `asset-changed-${n++}`, "1"), partner.id, clientId);
        assertAnswer(res, 400, 2012, why);
        await admin("/admin/assets/AED", { published: true, depositable: true, withdrawable: true });
      }
    } finally {
      await admin("/admin/assets/AED", { published: true, depositable: true, withdrawable: true });
    }
  });

  test("a fact changed that still lets the request through: the order made once, the facts kept anew", async () => {
    const { partner, clientId } = await keptClient("still-passes");
    try {
      await admin("/admin/assets/AED", { withdrawable: false });
      const before = await state(partner.id, clientId);
      const res = await answered(post(partner, "deposits", "still-passes-1", "7"), partner.id, clientId);
      assert.equal(res.statusCode, 200, res.body);
      assert.deepEqual(await state(partner.id, clientId), {
        orders: before.orders + 1,
        balances: { AED: (before.balances.AED ?? 0n) + 700_000_000n },
      });
      counted.statements.count = 0;
      const next = await signedPost(second, post(partner, "deposits", "still-passes-2", "1"));
      assert.equal(next.statusCode, 200, next.body);
      assert.equal(counted.statements.count, 1, "kept again");
    } finally {
      await admin("/admin/assets/AED", { withdrawable: true });
    }
    assert.deepEqual(await checkLedger(ctx.services.database.db), []);
  });

  test("a reference already taken, and the client deactivated since: 2020 first, as when the facts are read", async () => {
    const { partner, clientId } = await keptClient("ref-first");
    await admin(`/admin/partners/${partner.id}/clients/client-1/active`, { active: false, reason: "test" });
    const res = await answered(post(partner, "deposits", "ref-first-first"), partner.id, clientId);
    assertAnswer(res, 409, 2020, "a reference taken comes first");
    const fresh = await answered(post(partner, "deposits", "ref-first-new"), partner.id, clientId);
    assertAnswer(fresh, 400, 2010, "a new reference: the client's standing");
  });

  test("a withdrawal the balance does not cover, judged by kept facts: 3005, nothing written", async () => {
    const { partner, clientId } = await keptClient("short");
    const res = await answered(post(partner, "withdrawals", "short-1", "100.01"), partner.id, clientId);
    assertAnswer(res, 400, 3005, "funds short");
  });
});

describe("KeptFundingFacts", () => {
  const facts = (id: number) => ({
    client: { id, partner_client_id: `c-${id}`, status: "verified", active: true },
    asset: { type: "fiat", published: true, depositable: true, withdrawable: true },
  });
  const partner = "00000000-0000-4000-8000-000000000001";

  test("keeps at most its bound, the oldest going first, and forgets on demand", () => {
    const kept = new KeptFundingFacts(2);
    kept.keep(partner, "c-1", "AED", facts(1));
    kept.keep(partner, "c-2", "AED", facts(2));
    kept.keep(partner, "c-3", "USD", facts(3));
    assert.deepEqual(kept.size, { clients: 2, assets: 2 });
    assert.equal(kept.get(partner, "c-1", "AED"), undefined, "the oldest client went");
    assert.deepEqual(kept.get(partner, "c-3", "AED"), facts(3));
    kept.keep(partner, "c-4", "SAR", facts(4));
    assert.equal(kept.get(partner, "c-3", "AED"), undefined, "the oldest asset went");
    kept.forget(partner, "c-4", "SAR");
    assert.equal(kept.get(partner, "c-4", "SAR"), undefined);
    assert.deepEqual(kept.size, { clients: 1, assets: 1 });
    assert.throws(() => new KeptFundingFacts(0));
  });

  test("a client is kept under its partner: another partner's client of the same id is not", () => {
    const kept = new KeptFundingFacts(10);
    kept.keep(partner, "c-1", "AED", facts(1));
    assert.equal(kept.get("00000000-0000-4000-8000-000000000002", "c-1", "AED"), undefined);
  });
});
