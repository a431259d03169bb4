// Executes committed together (execute_quotes(), migration 0025): each trade of a call is made as its
// own statement would make it, and one refused (a reference taken, a token spent, the client
// changed, a replayed signature) undoes its own work only, is answered with the error its own
// statement would have raised, and changes nothing. A trade whose funds are gone is made rejected,
// as alone: its quote spent, nothing posted, counted and told once as rejected.

import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { after, before, describe, test } from "node:test";
import { sql } from "kysely";
import { isDuplicateOrderRef, RefusedInBatch } from "../../db/errors.ts";
import { pinBtcAed } from "../../testing/counted-process.ts";
import { partnerWithClientsOfSlots, signatureToRecord } from "../../testing/fixtures.ts";
import { onPostgres, startTestContext, type TestContext, type TestPartner } from "../../testing/harness.ts";
import { fundingLegs } from "../funding/funding-legs.ts";
import { fundOrder } from "../funding/funding-store.ts";
import { checkLedger, clientBalances } from "../ledger/index.ts";
import type { SignatureToRecord } from "../partners/index.ts";
import { tradeLegs } from "./trade-legs.ts";
import {
  type ExecutionCall,
  executeQuote,
  executeQuotes,
  findExecutionFacts,
  type TradingClient,
} from "./trading-store.ts";

interface Written {
  orders: string;
  postings: string;
  balances: string;
  spent: string;
  events: string;
  counts: string;
  slotCounts: string;
  signatures: string;
}

describe("execute_quotes(): trades committed together, each as its own statement", () => {
  let ctx: TestContext;
  before(async () => {
    ctx = await startTestContext();
    await pinBtcAed(ctx);
  });
  after(async () => {
    await ctx.close();
  });

  const db = () => ctx.services.database.db;
  type Client = { id: number; partnerClientId: string };

  /** A partner with `n` clients of distinct house slots, in slot order, each holding 10,000 AED. */
  const partnerWithClients = (name: string, n: number) =>
    partnerWithClientsOfSlots(ctx, name, n, 10_000_00000000n);

  /** A quote of 0.01 BTC for the client, made through the API: its token. */
  async function quoteFor(partner: TestPartner, client: Client): Promise<string> {
    const res = await ctx.signed({
      method: "POST",
      url: "/v1/partner/quotes",
      partner,
      body: {
        partner_client_id: client.partnerClientId,
        asset_pair: "BTC-AED",
        side: "buy",
        base_amount: "0.01",
      },
    });
    assert.equal(res.statusCode, 200, res.body);
    return (res.json() as { result: { token: string } }).result.token;
  }

  /** The trade of the client's quote, as the service hands it to execute_quote(). */
  async function tradeOf(
    partner: TestPartner,
    client: Client,
    token: string,
    ref: string | null,
    extra: { signed?: SignatureToRecord; held?: TradingClient } = {},
  ): Promise<ExecutionCall> {
    const tokenHash = createHash("sha256").update(token).digest();
    const facts = await findExecutionFacts(db(), partner.id, client.partnerClientId, tokenHash, ctx.clock);
    assert.ok(facts.quote !== undefined, "the quote can be spent");
    const { id: _, ...quote } = facts.quote;
    const { slot, legs } = tradeLegs({
      clientId: client.id,
      side: quote.side,
      baseId: quote.base_id,
      quoteId: quote.quote_id,
      baseAmount: quote.base_amount,
      quoteAmount: quote.quote_amount,
      fee: quote.fee,
      vat: quote.vat,
    });
    return {
      execution: {
        partnerId: partner.id,
        clientId: client.id,
        ref,
        tokenHash,
        clock: ctx.clock,
        quote,
        legs,
        slot,
      },
      ...extra,
    };
  }

  /** The signature to record with an order, by the partner's credentials as its row holds them. */
  const signatureOf = (partner: TestPartner) =>
    signatureToRecord(db(), partner.id, ctx.clock.nowMs() + 60_000);

  const standing = (c: Client, status = "verified"): TradingClient => ({
    id: c.id,
    partner_client_id: c.partnerClientId,
    status,
    active: true,
  });

  /** What a trade writes, for the partner: equal before and after means nothing changed. */
  async function written(partnerId: string) {
    const { rows } = await sql<Written>`
      SELECT
        (SELECT count(*) FROM orders WHERE partner_id = ${partnerId})::text AS orders,
        (SELECT count(*) FROM postings p JOIN orders o ON o.id = p.order_id WHERE o.partner_id = ${partnerId})::text AS postings,
        (SELECT coalesce(string_agg(id || ':' || balance, ',' ORDER BY id), '') FROM accounts WHERE partner_id = ${partnerId}) AS balances,
        (SELECT count(*) FROM quotes WHERE partner_id = ${partnerId} AND spent_at IS NOT NULL)::text AS spent,
        (SELECT coalesce(string_agg(type, ',' ORDER BY seq), '') FROM events WHERE partner_id = ${partnerId} AND type LIKE 'order.%') AS events,
        (SELECT coalesce(string_agg(status || ':' || orders, ',' ORDER BY status), '') FROM
           (SELECT status, sum(orders) AS orders FROM order_counts WHERE partner_id = ${partnerId} GROUP BY status) s) AS counts,
        (SELECT coalesce(string_agg(status || ':' || orders, ',' ORDER BY status), '') FROM
           (SELECT status, sum(orders) AS orders FROM order_slot_counts WHERE partner_id = ${partnerId} GROUP BY status) s) AS "slotCounts",
        (SELECT count(*) FROM used_signatures WHERE partner_id = ${partnerId})::text AS signatures
    `.execute(db());
    return rows[0]!;
  }

  const outcomeOf = (o: unknown) =>
    o instanceof RefusedInBatch ? o.code : ((o as { status?: string } | undefined)?.status ?? "missing");

  test("each trade's outcome is its own statement's; the refused ones write nothing", async () => {
    const { partner, clients } = await partnerWithClients("exec-batched-mixed", 7);
    const [c0, c1, c2, c3, c4, c5, c6] = clients as [Client, Client, Client, Client, Client, Client, Client];
    const tokens: string[] = [];
    for (const c of clients) tokens.push(await quoteFor(partner, c));
    const calls = [
      await tradeOf(partner, c0, tokens[0]!, "t-1", { held: standing(c0) }), // completed
      await tradeOf(partner, c1, tokens[1]!, "t-2"), // funds gone since the quote: rejected
      await tradeOf(partner, c2, tokens[2]!, "t-3"), // its token spent meanwhile: CP002
      await tradeOf(partner, c3, tokens[3]!, "t-1"), // the first trade's reference: 23505
      await tradeOf(partner, c4, tokens[4]!, "t-5", { held: standing(c4) }), // client changed: CP006
      await tradeOf(partner, c5, tokens[5]!, "t-6"), // a replayed signature: CP004 (below)
      await tradeOf(partner, c6, tokens[6]!, null, {
        held: standing(c6),
        signed: await signatureOf(partner),
      }), // completed
    ];
    const used = await signatureOf(partner);
    calls[5] = { ...calls[5]!, signed: used };
    // The changes meanwhile: c1's AED withdrawn, c2's token spent alone, c4 no longer verified, a
    // signature recorded.
    const out = fundingLegs("withdrawal", c1.id, "AED", 10_000_00000000n);
    await fundOrder(db(), {
      partnerId: partner.id,
      clientId: c1.id,
      ref: "empty-c1",
      type: "withdrawal",
      assetId: "AED",
      amount: 10_000_00000000n,
      legs: out.legs,
      slot: out.slot,
    });
    await executeQuote(db(), { ...calls[2]!.execution, ref: "t-3-alone" }, undefined, undefined);
    await db().updateTable("clients").set({ status: "rejected" }).where("id", "=", c4.id).execute();
    const recorded = fundingLegs("deposit", c5.id, "AED", 1n);
    await fundOrder(
      db(),
      {
        partnerId: partner.id,
        clientId: c5.id,
        ref: "sig",
        type: "deposit",
        assetId: "AED",
        amount: 1n,
        legs: recorded.legs,
        slot: recorded.slot,
      },
      used,
    );
    const before = await written(partner.id);

    const outcomes = await executeQuotes(db(), calls);
    assert.deepEqual(outcomes.map(outcomeOf), [
      "completed",
      "rejected",
      "CP002",
      "23505",
      "CP006",
      "CP004",
      "completed",
    ]);
    assert.ok(isDuplicateOrderRef(outcomes[3]));
    const first = outcomes[0] as { partner_order_ref: string; debit: string; credit: string; type: string };
    assert.deepEqual([first.partner_order_ref, first.type, first.debit], ["t-1", "buy", "0.01000000"]);

    const after = await written(partner.id);
    assert.equal(Number(after.orders) - Number(before.orders), 3, "two completed, one rejected");
    assert.equal(Number(after.postings) - Number(before.postings), 2 * calls[0]!.execution.legs.length);
    assert.equal(Number(after.spent) - Number(before.spent), 3, "the rejected trade spends its quote too");
    assert.equal(after.events, `${before.events},order.completed,order.rejected,order.completed`);
    assert.equal(Number(after.signatures) - Number(before.signatures), 1);
    const count = (counts: string, status: string) =>
      Number(
        counts
          .split(",")
          .find((c) => c.startsWith(`${status}:`))
          ?.split(":")[1] ?? 0,
      );
    assert.equal(count(after.counts, "completed") - count(before.counts, "completed"), 2);
    assert.equal(count(after.counts, "rejected") - count(before.counts, "rejected"), 1);
    assert.equal(after.slotCounts, after.counts);
    assert.equal((await clientBalances(db(), c0.id)).get("BTC")?.balance, 1_000_000n);
    assert.equal((await clientBalances(db(), c6.id)).get("BTC")?.balance, 1_000_000n);
    for (const c of [c1, c3, c4, c5]) assert.equal((await clientBalances(db(), c.id)).get("BTC"), undefined);
    assert.deepEqual(await checkLedger(db()), []);

    // Each refused trade, made alone now, is refused with the same error, and writes nothing.
    const still = await written(partner.id);
    for (const i of [2, 3, 4, 5]) {
      const { execution, signed, held } = calls[i]!;
      await assert.rejects(executeQuote(db(), execution, signed, held), (err: { code?: string }) => {
        assert.equal(err.code, (outcomes[i] as RefusedInBatch).code, `trade ${i + 1} alone`);
        return true;
      });
    }
    assert.deepEqual(await written(partner.id), still);
  });

  test("orders gains a column and the plans are made again: an execute's statement, alone or batched, still answers", async () => {
    // As funding-batched.test.ts: one connection, the plans discarded after the column is added.
    const { partner, clients } = await partnerWithClients("exec-batched-schema", 3);
    const [c0, c1, c2] = clients as [Client, Client, Client];
    const tokens = [await quoteFor(partner, c0), await quoteFor(partner, c1), await quoteFor(partner, c2)];
    const calls = [
      await tradeOf(partner, c0, tokens[0]!, "s-1"),
      await tradeOf(partner, c1, tokens[1]!, "s-2"),
      await tradeOf(partner, c2, tokens[2]!, "s-3"),
    ];
    const more = [await quoteFor(partner, c0), await quoteFor(partner, c1), await quoteFor(partner, c2)];
    const after = [
      await tradeOf(partner, c0, more[0]!, "s-4"),
      await tradeOf(partner, c1, more[1]!, "s-5"),
      await tradeOf(partner, c2, more[2]!, "s-6"),
    ];
    await db()
      .connection()
      .execute(async (conn) => {
        await executeQuote(conn, calls[0]!.execution);
        assert.deepEqual((await executeQuotes(conn, calls.slice(1))).map(outcomeOf), [
          "completed",
          "completed",
        ]);
        // The column stays: the tests after this one run with it, as a service does after a migration.
        await sql`ALTER TABLE orders ADD COLUMN batched_note text`.execute(conn);
        await sql`DISCARD PLANS`.execute(conn);
        assert.equal((await executeQuote(conn, after[0]!.execution)).partner_order_ref, "s-4");
        const second = await executeQuotes(conn, after.slice(1));
        assert.deepEqual(second.map(outcomeOf), ["completed", "completed"]);
      });
  });

  test("a call out of order fails as a whole and writes nothing", async () => {
    const { partner, clients } = await partnerWithClients("exec-batched-order", 2);
    const calls = [
      await tradeOf(partner, clients[1]!, await quoteFor(partner, clients[1]!), "o-1"),
      await tradeOf(partner, clients[0]!, await quoteFor(partner, clients[0]!), "o-2"),
    ];
    const before = await written(partner.id);
    await assert.rejects(executeQuotes(db(), calls), (err: { code?: string }) => err.code === "23514");
    assert.deepEqual(await written(partner.id), before);
  });

  test("concurrent executes through the API: every answer its own, in fewer calls than trades on PostgreSQL", async () => {
    const { partner, clients } = await partnerWithClients("exec-batched-http", 12);
    const tokens: string[] = [];
    for (const c of clients) tokens.push(await quoteFor(partner, c));
    const execute = (client: Client, token: string, ref: string) =>
      ctx.signed({
        method: "POST",
        url: "/v1/partner/quotes/execute",
        partner,
        body: { partner_client_id: client.partnerClientId, token, partner_order_ref: ref },
      });
    const callsBefore = await callsObserved(ctx);
    const answers = await Promise.all([
      ...clients.map((c, i) => execute(c, tokens[i]!, `x-${i}`)),
      // Each token a second time: exactly one of the two executes spends it.
      ...clients.map((c, i) => execute(c, tokens[i]!, `y-${i}`)),
    ]);
    const codes = answers.map((r) => (r.statusCode === 200 ? 200 : (r.json() as { code: number }).code));
    for (let i = 0; i < clients.length; i++) {
      assert.deepEqual([codes[i], codes[i + clients.length]].sort(), [200, 4008], `client ${i + 1}'s token`);
      assert.equal((await clientBalances(db(), clients[i]!.id)).get("BTC")?.balance, 1_000_000n);
    }
    assert.deepEqual(await checkLedger(db()), []);
    const after = await callsObserved(ctx);
    const calls = after.calls - callsBefore.calls;
    const orders = after.orders - callsBefore.orders;
    assert.ok(orders >= clients.length, `${orders} trades sent`);
    // PGlite runs a statement within the call that sends it: no trade finds another's in flight.
    if (onPostgres) assert.ok(calls < orders, `${calls} calls for ${orders} trades`);
    else assert.equal(calls, orders);
  });
});

/** Calls made and trades sent so far, from counterpart_orders_per_call{use="execute"}. */
async function callsObserved(ctx: TestContext): Promise<{ calls: number; orders: number }> {
  const { values } = await ctx.services.ordersPerCall.get();
  const execute = values.filter((v) => v.labels.use === "execute");
  const calls = execute.find((v) => v.metricName?.endsWith("_count"))?.value ?? 0;
  const orders = execute.find((v) => v.metricName?.endsWith("_sum"))?.value ?? 0;
  return { calls, orders };
}
