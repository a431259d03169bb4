// Deposits and withdrawals committed together (fund_orders(), migration 0024): each order of a call
// is made as its own statement would make it, and one refused (a reference taken, funds short,
// facts changed, a replayed signature, credentials changed) undoes its own work only, is answered
// with the error its own statement would have raised, and changes nothing: no order, no posting, no
// balance, no event, no count, no recorded signature. A call that fails as a whole writes nothing.

import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { sql } from "kysely";
import { databaseError, isDuplicateOrderRef, RefusedInBatch } from "../../db/errors.ts";
import { insertClient, partnerWithClientsOfSlots, signatureToRecord } from "../../testing/fixtures.ts";
import { onPostgres, startTestContext, type TestContext, type TestPartner } from "../../testing/harness.ts";
import { checkLedger, clientBalances, houseSlots } from "../ledger/index.ts";
import type { SignatureToRecord } from "../partners/index.ts";
import { fundingLegs } from "./funding-legs.ts";
import {
  type FundingCall,
  type FundingOutcome,
  fundOrder,
  fundOrders,
  type HeldFacts,
} from "./funding-store.ts";

describe("fund_orders(): orders committed together, each as its own statement", () => {
  let ctx: TestContext;
  before(async () => {
    ctx = await startTestContext();
  });
  after(async () => {
    await ctx.close();
  });

  const db = () => ctx.services.database.db;
  type Client = { id: number; partnerClientId: string };

  const partnerWithClients = (name: string, n: number) => partnerWithClientsOfSlots(ctx, name, n);

  /** The signature to record with an order, by the partner's credentials as its row holds them. */
  const signatureOf = (partner: TestPartner) =>
    signatureToRecord(db(), partner.id, ctx.clock.nowMs() + 60_000);

  function call(
    partner: TestPartner,
    client: { id: number; partnerClientId: string },
    type: "deposit" | "withdrawal",
    ref: string,
    amount: bigint,
    extra: { signed?: SignatureToRecord; held?: HeldFacts } = {},
  ): FundingCall {
    const { slot, legs } = fundingLegs(type, client.id, "AED", amount);
    return {
      order: { partnerId: partner.id, clientId: client.id, ref, type, assetId: "AED", amount, legs, slot },
      ...extra,
    };
  }

  function heldFacts(client: { id: number; partnerClientId: string }, status = "verified"): HeldFacts {
    return {
      client: { id: client.id, partner_client_id: client.partnerClientId, status, active: true },
      asset: { type: "fiat", published: true, depositable: true, withdrawable: true },
    };
  }

  /** Everything an order writes, for the partner: equal before and after means nothing changed. */
  async function written(partnerId: string) {
    const { rows } = await sql<{
      orders: string;
      postings: string;
      balances: string;
      events: string;
      counts: string;
      slotCounts: string;
      signatures: string;
    }>`
      SELECT
        (SELECT count(*) FROM orders WHERE partner_id = ${partnerId})::text AS orders,
        (SELECT count(*) FROM postings p JOIN orders o ON o.id = p.order_id WHERE o.partner_id = ${partnerId})::text AS postings,
        (SELECT coalesce(string_agg(id || ':' || balance, ',' ORDER BY id), '') FROM accounts WHERE partner_id = ${partnerId}) AS balances,
        (SELECT count(*) FROM events WHERE partner_id = ${partnerId})::text AS events,
        (SELECT coalesce(sum(orders), 0) FROM order_counts WHERE partner_id = ${partnerId})::text AS counts,
        (SELECT coalesce(sum(orders), 0) FROM order_slot_counts WHERE partner_id = ${partnerId})::text AS "slotCounts",
        (SELECT count(*) FROM used_signatures WHERE partner_id = ${partnerId})::text AS signatures
    `.execute(db());
    return rows[0]!;
  }

  const codeOf = (outcome: FundingOutcome | undefined) =>
    outcome instanceof RefusedInBatch ? outcome.code : outcome === undefined ? "missing" : "made";

  test("each order's outcome is its own statement's; the refused ones write nothing", async () => {
    const { partner, clients } = await partnerWithClients("batched-mixed", 8);
    const [c0, c1, c2, c3, c4, c5, c6, c7] = clients as [(typeof clients)[number], ...typeof clients];
    // A signature already recorded, and c3 no longer verified though its process kept it so.
    const used = await signatureOf(partner);
    await fundOrder(db(), call(partner, c0, "deposit", "setup-sig", 1n).order, used);
    await db().updateTable("clients").set({ status: "rejected" }).where("id", "=", c3!.id).execute();
    const changed = { ...(await signatureOf(partner)), allowedIps: ["203.0.113.9"] };
    const fresh = await signatureOf(partner);
    const before = await written(partner.id);

    const calls = [
      call(partner, c0, "deposit", "b-1", 150_000_000n, { held: heldFacts(c0) }), // made
      call(partner, c1!, "withdrawal", "b-2", 100_000_000n), // funds short: CP001
      call(partner, c2!, "deposit", "b-1", 5n), // the first order's reference: 23505
      call(partner, c3!, "deposit", "b-4", 5n, { held: heldFacts(c3!) }), // facts changed: CP005
      call(partner, c4!, "deposit", "b-5", 5n, { signed: used }), // a replay: CP004
      call(partner, c5!, "deposit", "b-6", 5n, { signed: changed }), // credentials changed: CP003
      call(partner, c6!, "deposit", "b-7", 250_000_000n, { signed: fresh, held: heldFacts(c6!) }), // made
      call(partner, c7!, "withdrawal", "b-8", 1n, { signed: changed, held: heldFacts(c7!, "rejected") }), // CP003 first
    ];
    const outcomes = await fundOrders(db(), calls);
    assert.deepEqual(outcomes.map(codeOf), [
      "made",
      "CP001",
      "23505",
      "CP005",
      "CP004",
      "CP003",
      "made",
      "CP003",
    ]);
    assert.ok(isDuplicateOrderRef(outcomes[2]), "the reference taken is told as the order reference's key");
    assert.equal(databaseError(outcomes[1])?.kind, "insufficient_funds");

    const made = outcomes[0] as Exclude<FundingOutcome, RefusedInBatch>;
    assert.equal(made.partner_order_ref, "b-1");
    assert.equal(made.client_id, c0.id);
    assert.equal(made.debit, "1.50000000");
    assert.equal(made.status, "completed");
    assert.equal((outcomes[6] as typeof made).debit, "2.50000000");

    // Exactly the two orders made, each with its postings, event and count, and the one signature.
    const after = await written(partner.id);
    assert.equal(Number(after.orders) - Number(before.orders), 2);
    assert.equal(Number(after.postings) - Number(before.postings), 4);
    assert.equal(Number(after.events) - Number(before.events), 2);
    assert.equal(Number(after.counts) - Number(before.counts), 2);
    assert.equal(Number(after.slotCounts) - Number(before.slotCounts), 2);
    assert.equal(Number(after.signatures) - Number(before.signatures), 1);
    assert.equal((await clientBalances(db(), c0.id)).get("AED")?.balance, 150_000_001n);
    assert.equal((await clientBalances(db(), c6!.id)).get("AED")?.balance, 250_000_000n);
    for (const c of [c1!, c2!, c3!, c4!, c5!, c7!])
      assert.equal((await clientBalances(db(), c.id)).get("AED"), undefined);
    assert.deepEqual(await checkLedger(db()), []);

    // Each refused order, made alone now, is refused with the same error, and writes nothing.
    const still = await written(partner.id);
    for (const i of [1, 2, 3, 4, 5, 7]) {
      const { order, signed, held } = calls[i]!;
      await assert.rejects(fundOrder(db(), order, signed, held), (err: { code?: string }) => {
        assert.equal(err.code, (outcomes[i] as RefusedInBatch).code, `order ${i + 1} alone`);
        return true;
      });
    }
    assert.deepEqual(await written(partner.id), still);
  });

  test("two orders of one reference in one call: the first is made, the second told the reference is taken", async () => {
    const { partner, clients } = await partnerWithClients("batched-same-ref", 2);
    const outcomes = await fundOrders(db(), [
      call(partner, clients[0]!, "deposit", "same", 10n),
      call(partner, clients[1]!, "deposit", "same", 20n),
    ]);
    assert.deepEqual(outcomes.map(codeOf), ["made", "23505"]);
    assert.ok(isDuplicateOrderRef(outcomes[1]));
    assert.equal((await written(partner.id)).orders, "1");
  });

  test("references that an array literal would misread are kept exactly, each its own", async () => {
    const { partner, clients } = await partnerWithClients("batched-literal", 6);
    const refs = ["NULL", "a,b", '{"x"}', "back\\slash", " spaced ", "ünï ✓"];
    const outcomes = await fundOrders(
      db(),
      clients.map((c, i) => call(partner, c, "deposit", refs[i]!, 1n)),
    );
    assert.deepEqual(
      outcomes.map((o) => (o as { partner_order_ref: string }).partner_order_ref),
      refs,
    );
    const { rows } = await sql<{ ref: string }>`
      SELECT partner_order_ref AS ref FROM orders WHERE partner_id = ${partner.id} ORDER BY id`.execute(db());
    assert.deepEqual(
      rows.map((r) => r.ref),
      refs,
    );
  });

  test("a withdrawal covered by the balance is made; the next, no longer covered, refused alone", async () => {
    const { partner, clients } = await partnerWithClients("batched-funds", 3);
    const [a, b, c] = clients as [
      (typeof clients)[number],
      (typeof clients)[number],
      (typeof clients)[number],
    ];
    await fundOrder(db(), call(partner, b, "deposit", "fund-b", 100n).order);
    const outcomes = await fundOrders(db(), [
      call(partner, a, "deposit", "w-1", 7n),
      call(partner, b, "withdrawal", "w-2", 100n),
      call(partner, c, "withdrawal", "w-3", 1n),
    ]);
    assert.deepEqual(outcomes.map(codeOf), ["made", "made", "CP001"]);
    assert.equal((await clientBalances(db(), b.id)).get("AED")?.balance, 0n);
    assert.deepEqual(await checkLedger(db()), []);
  });

  test("a call out of slot order, or with two orders of one slot and partner, fails as a whole and writes nothing", async () => {
    const { partner, clients } = await partnerWithClients("batched-order", 2);
    const [c0, c1] = clients as [(typeof clients)[number], (typeof clients)[number]];
    let sameSlot = await insertClient(db(), partner.id, 100);
    for (let n = 101; sameSlot.id % houseSlots !== c0.id % houseSlots; n++)
      sameSlot = await insertClient(db(), partner.id, n);
    const before = await written(partner.id);
    for (const calls of [
      [call(partner, c1, "deposit", "o-1", 1n), call(partner, c0, "deposit", "o-2", 1n)],
      [call(partner, c0, "deposit", "o-3", 1n), call(partner, sameSlot, "deposit", "o-4", 1n)],
    ]) {
      await assert.rejects(fundOrders(db(), calls), (err: { code?: string }) => err.code === "23514");
    }
    assert.deepEqual(await written(partner.id), before);
  });

  test("orders of one slot and two partners go in one call, by partner", async () => {
    const a = await partnerWithClients("batched-partner-a", 1);
    // One client of each slot: one of them shares `ca`'s.
    const b = await partnerWithClients("batched-partner-b", houseSlots);
    const ca = a.clients[0]!;
    const cb = b.clients.find((c) => c.id % houseSlots === ca.id % houseSlots)!;
    const pair = [call(a.partner, ca, "deposit", "p-1", 3n), call(b.partner, cb, "deposit", "p-1", 4n)].sort(
      (x, y) => (x.order.partnerId < y.order.partnerId ? -1 : 1),
    );
    assert.deepEqual(
      (await fundOrders(db(), pair)).map(codeOf),
      ["made", "made"],
      "one reference, two partners",
    );
    assert.equal((await clientBalances(db(), ca.id)).get("AED")?.balance, 3n);
    assert.equal((await clientBalances(db(), cb.id)).get("AED")?.balance, 4n);
    await assert.rejects(
      fundOrders(db(), [...pair].reverse()),
      (err: { code?: string }) => err.code === "23514",
    );
  });

  test("orders gains a column and the plans are made again: a deposit's statement, alone or batched, still answers", async () => {
    // One connection, so that the statements prepared before the column are the ones run after it.
    // DISCARD PLANS makes PostgreSQL plan them again, as a reset of its caches does at any time: a
    // statement reading the order by `*` then fails with SQLSTATE 0A000 (it did, under load, in
    // funding.test.ts's schema change).
    const { partner, clients } = await partnerWithClients("batched-schema", 6);
    const [c0, c1, c2, c3, c4, c5] = clients as [Client, Client, Client, Client, Client, Client];
    await db()
      .connection()
      .execute(async (conn) => {
        await fundOrder(conn, call(partner, c0, "deposit", "s-1", 1n).order);
        const first = await fundOrders(conn, [
          call(partner, c1, "deposit", "s-2", 1n),
          call(partner, c2, "deposit", "s-3", 1n),
        ]);
        assert.deepEqual(first.map(codeOf), ["made", "made"]);
        // The column stays: the tests after this one run with it, as a service does after a migration.
        await sql`ALTER TABLE orders ADD COLUMN batched_note text`.execute(conn);
        await sql`DISCARD PLANS`.execute(conn);
        const alone = await fundOrder(conn, call(partner, c3, "deposit", "s-4", 1n).order);
        assert.equal(alone.partner_order_ref, "s-4");
        const second = await fundOrders(conn, [
          call(partner, c4, "deposit", "s-5", 1n),
          call(partner, c5, "deposit", "s-6", 1n),
        ]);
        assert.deepEqual(second.map(codeOf), ["made", "made"]);
        assert.equal((second[1] as { partner_order_ref: string }).partner_order_ref, "s-6");
      });
  });
});

describe("deposits and withdrawals arriving together are committed together, each answered as its own", () => {
  let ctx: TestContext;
  before(async () => {
    ctx = await startTestContext();
  });
  after(async () => {
    await ctx.close();
  });

  test("concurrent requests: every answer is its own request's, and the balances are what the answers say", async () => {
    const db = ctx.services.database.db;
    const partner = await ctx.addPartner({ name: "batched-http" });
    const clients = [];
    for (let i = 1; i <= 24; i++) clients.push(await insertClient(db, partner.id, i));
    const post = (kind: "deposits" | "withdrawals", client: number, amount: string, ref: string) =>
      ctx.signed({
        method: "POST",
        url: `/v1/partner/${kind}`,
        partner,
        body: { partner_client_id: `client-${client}`, asset_id: "AED", amount, partner_order_ref: ref },
      });
    // The first deposit of each client reads its facts (the process keeps them): these go one by
    // one. The rest are judged by the facts kept, and reach the queue together.
    for (let i = 1; i <= 24; i++)
      assert.equal((await post("deposits", i, "0.5", `first-${i}`)).statusCode, 200);
    const callsBefore = await callsObserved(ctx);
    const answers = await Promise.all([
      ...clients.map((_, i) => post("deposits", i + 1, "10", `dep-${i + 1}`)),
      post("deposits", 1, "1", "twice"),
      post("deposits", 2, "1", "twice"),
      post("withdrawals", 3, "1000", "too-much"),
      ...clients.slice(0, 12).map((_, i) => post("withdrawals", i + 1, "4", `wd-${i + 1}`)),
    ]);
    const codes = answers.map((r) =>
      r.statusCode === 200 ? 200 : (JSON.parse(r.body) as { code: number }).code,
    );
    // Every deposit is made; of the two with one reference, exactly one; the withdrawal of 1,000 is
    // short; a withdrawal of 4 is made whenever it came after its client's deposit, else short.
    assert.deepEqual(codes.slice(0, 24), Array(24).fill(200));
    assert.deepEqual(codes.slice(24, 26).sort(), [200, 2020]);
    assert.equal(codes[26], 3005);
    const withdrawals = codes.slice(27);
    for (const code of withdrawals) assert.ok(code === 200 || code === 3005, `a withdrawal answered ${code}`);

    const made = withdrawals.map((code) => code === 200);
    for (let i = 0; i < 24; i++) {
      const extra = answers[24]!.statusCode === 200 ? (i === 0 ? 1n : 0n) : i === 1 ? 1n : 0n;
      const expected = 10_50000000n + extra * 1_00000000n - (made[i] ? 4_00000000n : 0n);
      assert.equal(
        (await clientBalances(db, clients[i]!.id)).get("AED")?.balance,
        expected,
        `client-${i + 1}`,
      );
    }
    const { rows } = await sql<{
      n: string;
    }>`SELECT count(*)::text AS n FROM orders WHERE partner_id = ${partner.id}`.execute(db);
    assert.equal(Number(rows[0]!.n), 49 + made.filter(Boolean).length);
    assert.deepEqual(await checkLedger(db), []);

    // On PostgreSQL they went in fewer calls than orders: some were committed together. PGlite runs
    // a statement within the call that sends it, so no order ever finds another's call in flight:
    // each goes alone, and the answers above are the same.
    const after = await callsObserved(ctx);
    assert.equal(after.orders - callsBefore.orders, answers.length);
    const calls = after.calls - callsBefore.calls;
    if (onPostgres) assert.ok(calls < answers.length, `${calls} calls for ${answers.length} orders`);
    else assert.equal(calls, answers.length);
  });
});

/** Calls made and orders sent so far, from counterpart_orders_per_call{use="funding"}. */
async function callsObserved(ctx: TestContext): Promise<{ calls: number; orders: number }> {
  const { values } = await ctx.services.ordersPerCall.get();
  const funding = values.filter((v) => v.labels.use === "funding");
  const calls = funding.find((v) => v.metricName?.endsWith("_count"))?.value ?? 0;
  const orders = funding.find((v) => v.metricName?.endsWith("_sum"))?.value ?? 0;
  return { calls, orders };
}
