// Quotes stored together (insertQuotesIfHeld(), docs/decisions.md "Quotes committed together"):
// each quote of a call is answered exactly as insertQuoteIfHeld() answers it alone on the same rows
// (stored, or not with the facts its statement read), and one not stored writes nothing, its
// signature's record included. A quote whose part raises (a replayed signature, the partner's
// credentials changed) makes the call write nothing and answer RetryAlone. Through the API on
// PostgreSQL, concurrent quotes go in fewer calls than quotes, each answered and executable.

import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { after, before, describe, test } from "node:test";
import { sql } from "kysely";
import { inTransaction } from "../../db/transaction.ts";
import { pinBtcAed } from "../../testing/counted-process.ts";
import { partnerWithClientsOfSlots, signatureToRecord } from "../../testing/fixtures.ts";
import { onPostgres, startTestContext, type TestContext, type TestPartner } from "../../testing/harness.ts";
import { fundingLegs } from "../funding/funding-legs.ts";
import { fundOrder } from "../funding/funding-store.ts";
import { checkLedger, RetryAlone } from "../ledger/index.ts";
import type { SignatureToRecord } from "../partners/index.ts";
import {
  findQuoteFacts,
  type HeldQuoteAnswer,
  type HeldQuoteCall,
  insertQuoteIfHeld,
  insertQuotesIfHeld,
  type QuoteHeld,
} from "./trading-store.ts";

const staleAfterSeconds = 60;
const baseAmount = 1_000_000n; // 0.01 BTC
const quoteAmount = 3_500_00000000n; // at 350,000 AED

describe("insertQuotesIfHeld(): quotes stored together, each as its own statement", () => {
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

  /** A partner with `n` clients, each holding 10,000 AED. */
  const partnerWithClients = (name: string, n: number) =>
    partnerWithClientsOfSlots(ctx, name, n, 10_000_00000000n);

  /** A BTC-AED buy of 0.01 for the client, held on the facts read now (as a process keeps them). */
  async function quoteCall(
    partner: TestPartner,
    client: Client,
    signed?: SignatureToRecord,
  ): Promise<HeldQuoteCall> {
    const facts = await findQuoteFacts(
      db(),
      partner.id,
      client.partnerClientId,
      "BTC-AED",
      ctx.clock,
      staleAfterSeconds,
    );
    assert.ok(facts.pair !== undefined && facts.client !== null);
    const { stale: _, ...pair } = facts.pair;
    const held: QuoteHeld = {
      partnerClientId: client.partnerClientId,
      client: facts.client,
      pair,
      staleAfterSeconds,
      need: { asset: "quote", amount: quoteAmount },
    };
    return {
      row: {
        tokenHash: randomBytes(32),
        partnerId: partner.id,
        clientId: client.id,
        pairId: pair.id,
        side: "buy",
        price: pair.buy,
        baseAmount,
        quoteAmount,
        fee: 0n,
        vat: 0n,
        vatPercentage: null,
        lifetimeSeconds: pair.lifetime_s,
      },
      held,
      clock: ctx.clock,
      signed,
    };
  }

  const signatureOf = (partner: TestPartner) =>
    signatureToRecord(db(), partner.id, ctx.clock.nowMs() + 60_000);

  /** The partner's quotes and recorded signatures: equal before and after means nothing was written. */
  async function written(partnerId: string) {
    const { rows } = await sql<{ quotes: string; signatures: string }>`
      SELECT
        (SELECT coalesce(string_agg(encode(token_hash, 'hex'), ',' ORDER BY token_hash), '')
           FROM quotes WHERE partner_id = ${partnerId}) AS quotes,
        (SELECT coalesce(string_agg(encode(signature, 'hex'), ',' ORDER BY signature), '')
           FROM used_signatures WHERE partner_id = ${partnerId}) AS signatures
    `.execute(db());
    return rows[0]!;
  }

  /** Each call alone, as insertQuoteIfHeld() answers it on the rows as they are, then rolled back. */
  async function aloneAnswers(calls: readonly HeldQuoteCall[]): Promise<HeldQuoteAnswer[]> {
    const answers: HeldQuoteAnswer[] = [];
    await inTransaction(db(), async (tx) => {
      for (const c of calls) answers.push(await insertQuoteIfHeld(tx, c.row, c.held, c.clock, c.signed));
      throw new RolledBack();
    }).catch((err: unknown) => {
      if (!(err instanceof RolledBack)) throw err;
    });
    return answers;
  }

  test("each quote's answer is its own statement's; those not stored write nothing", async () => {
    const { partner, clients } = await partnerWithClients("quotes-batched-mixed", 6);
    const [c0, c1, c2, c3, c4, c5] = clients as [Client, Client, Client, Client, Client, Client];
    const calls = [
      await quoteCall(partner, c0, await signatureOf(partner)), // stored, its signature recorded
      await quoteCall(partner, c1), // the client no longer verified
      await quoteCall(partner, c2), // the client deactivated
      await quoteCall(partner, c3, await signatureOf(partner)), // its funds gone: no record either
      await quoteCall(partner, c4), // kept before a price change
      await quoteCall(partner, c5), // kept before a fee change
      // Stored: a second quote of the first client, signed, its keys after the other signed quotes'.
      await quoteCall(partner, c0, await signatureOf(partner)),
      await quoteCall(partner, c4), // kept before the partner's VAT changed
    ];
    await db().updateTable("clients").set({ status: "rejected" }).where("id", "=", c1.id).execute();
    await db().updateTable("clients").set({ active: false }).where("id", "=", c2.id).execute();
    const out = fundingLegs("withdrawal", c3.id, "AED", 10_000_00000000n);
    await fundOrder(db(), {
      partnerId: partner.id,
      clientId: c3.id,
      ref: "empty-c3",
      type: "withdrawal",
      assetId: "AED",
      amount: 10_000_00000000n,
      legs: out.legs,
      slot: out.slot,
    });
    const at = (i: number) => calls[i]!;
    calls[4] = {
      ...at(4),
      held: { ...at(4).held, pair: { ...at(4).held.pair, buy: at(4).held.pair.buy - 1n } },
    };
    calls[5] = {
      ...at(5),
      held: { ...at(5).held, pair: { ...at(5).held.pair, fee_rate: at(5).held.pair.fee_rate + 1n } },
    };

    const vat = at(7).held.pair.vat_percentage;
    calls[7] = {
      ...at(7),
      held: {
        ...at(7).held,
        pair: { ...at(7).held.pair, vat_percentage: vat === null ? 5_00000000n : null },
      },
    };

    const alone = await aloneAnswers(calls);
    const before = await written(partner.id);
    const together = await insertQuotesIfHeld(db(), calls);
    assert.deepEqual(
      together.map((a) => a.stored),
      [true, false, false, false, false, false, true, false],
    );
    assert.deepEqual(together, alone, "each answer as its own statement's, facts included");
    assert.equal(together[1]!.facts.client?.status, "rejected");
    assert.equal(together[2]!.facts.client?.active, false);
    assert.equal(together[3]!.facts.quoteAvailable, 0n);

    const after = await written(partner.id);
    const added = (was: string, is: string) =>
      is.split(",").filter((x) => x !== "" && !was.split(",").includes(x));
    assert.deepEqual(
      added(before.quotes, after.quotes).sort(),
      [at(0).row.tokenHash.toString("hex"), at(6).row.tokenHash.toString("hex")].sort(),
    );
    assert.deepEqual(
      added(before.signatures, after.signatures).sort(),
      [at(0), at(6)].map((c) => Buffer.from(c.signed!.signature).toString("hex")).sort(),
    );
    assert.deepEqual(await checkLedger(db()), []);
  });

  test("a replayed signature or changed credentials: the call writes nothing and answers RetryAlone", async () => {
    const { partner, clients } = await partnerWithClients("quotes-batched-raise", 2);
    const [c0, c1] = clients as [Client, Client];
    const used = await signatureOf(partner);
    const recorded = await quoteCall(partner, c0, used);
    assert.equal((await insertQuoteIfHeld(db(), recorded.row, recorded.held, ctx.clock, used)).stored, true);
    const stale = {
      ...(await signatureOf(partner)),
      publicKeys: ["-----BEGIN PUBLIC KEY----- not the partner's"],
    };
    for (const [why, signed, code] of [
      ["a replayed signature", used, "CP004"],
      ["credentials changed", stale, "CP003"],
    ] as const) {
      const calls = [
        await quoteCall(partner, c0, await signatureOf(partner)),
        await quoteCall(partner, c1, signed),
        await quoteCall(partner, c0),
      ];
      const before = await written(partner.id);
      await assert.rejects(insertQuotesIfHeld(db(), calls), (err: unknown) => {
        assert.ok(err instanceof RetryAlone, why);
        assert.equal((err.cause as { code?: string }).code, code, why);
        return true;
      });
      assert.deepEqual(await written(partner.id), before, `${why}: nothing written`);
      // Alone, the quote raises the same, and the others are stored.
      await assert.rejects(
        insertQuoteIfHeld(db(), calls[1]!.row, calls[1]!.held, ctx.clock, calls[1]!.signed),
        (err: { code?: string }) => err.code === code,
      );
      for (const i of [0, 2]) {
        const c = calls[i]!;
        assert.equal((await insertQuoteIfHeld(db(), c.row, c.held, ctx.clock, c.signed)).stored, true, why);
      }
    }
  });

  test("the statement is planned once per connection, whatever the number of quotes", async () => {
    const { partner, clients } = await partnerWithClients("quotes-batched-plans", 8);
    const sizes = [2, 3, 4, 5, 6, 7, 8, 3, 2, 5];
    const batches: HeldQuoteCall[][] = [];
    for (const size of sizes) {
      const calls = [];
      for (const c of clients.slice(0, size)) calls.push(await quoteCall(partner, c));
      batches.push(calls);
    }
    const plans = await db()
      .connection()
      .execute(async (conn) => {
        const plansNow = async () => {
          const { rows } = await sql<{ generic_plans: string; custom_plans: string }>`
            SELECT generic_plans::text, custom_plans::text FROM pg_prepared_statements
            WHERE statement LIKE '%WITH ORDINALITY AS u (partner_id,%'`.execute(conn);
          assert.ok(rows.length <= 1, "one prepared statement for every size");
          return { generic: Number(rows[0]?.generic_plans ?? 0), custom: Number(rows[0]?.custom_plans ?? 0) };
        };
        const before = await plansNow();
        for (const calls of batches) {
          const answers = await insertQuotesIfHeld(conn, calls);
          assert.deepEqual(
            answers.map((a) => a.stored),
            calls.map(() => true),
          );
        }
        const after = await plansNow();
        return { before, after };
      });
    // PostgreSQL makes custom plans for a prepared statement's first five executions on a
    // connection, then keeps the generic plan unless a custom one looks cheaper: with the arrays as
    // constants it did, and planned the statement again at every call.
    assert.ok(plans.after.custom <= 5, `custom plans: ${plans.after.custom}`);
    assert.equal(
      plans.after.generic - plans.before.generic,
      sizes.length - (plans.after.custom - plans.before.custom),
      "every execution after the first five on the generic plan",
    );
  });

  test("concurrent quotes through the API: every answer its own, in fewer calls than quotes on PostgreSQL", async () => {
    const { partner, clients } = await partnerWithClients("quotes-batched-http", 12);
    const quote = (client: Client) =>
      ctx.signed({
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
    // A first quote each: the process keeps the client's and the pair's facts.
    for (const c of clients) assert.equal((await quote(c)).statusCode, 200);
    const quotesBefore = await written(partner.id);
    const callsBefore = await callsObserved(ctx);
    const answers = await Promise.all([...clients, ...clients, ...clients].map((c) => quote(c)));
    for (const a of answers) assert.equal(a.statusCode, 200, a.body);
    const tokens = answers.map((a) => (a.json() as { result: { token: string } }).result.token);
    assert.equal(new Set(tokens).size, tokens.length);
    const quotesAfter = await written(partner.id);
    assert.equal(
      quotesAfter.quotes.split(",").length - quotesBefore.quotes.split(",").length,
      answers.length,
      "one quote row per answer",
    );
    const after = await callsObserved(ctx);
    const calls = after.calls - callsBefore.calls;
    const stored = after.orders - callsBefore.orders;
    assert.equal(stored, answers.length, "each quote through the queue once");
    // PGlite runs a statement within the call that sends it: no quote finds another's in flight.
    if (onPostgres) assert.ok(calls < stored, `${calls} calls for ${stored} quotes`);
    else assert.equal(calls, stored);
    // Every token answered can be executed, once.
    const executed = await Promise.all(
      tokens.slice(0, clients.length).map((token, i) =>
        ctx.signed({
          method: "POST",
          url: "/v1/partner/quotes/execute",
          partner,
          body: { partner_client_id: clients[i]!.partnerClientId, token },
        }),
      ),
    );
    for (const e of executed) {
      assert.equal(e.statusCode, 200, e.body);
      assert.equal((e.json() as { result: { status: string } }).result.status, "completed");
    }
    assert.deepEqual(await checkLedger(db()), []);
  });
});

class RolledBack extends Error {}

/** Calls made and quotes sent so far, from counterpart_orders_per_call{use="quote"}. */
async function callsObserved(ctx: TestContext): Promise<{ calls: number; orders: number }> {
  const { values } = await ctx.services.ordersPerCall.get();
  const quote = values.filter((v) => v.labels.use === "quote");
  const calls = quote.find((v) => v.metricName?.endsWith("_count"))?.value ?? 0;
  const orders = quote.find((v) => v.metricName?.endsWith("_sum"))?.value ?? 0;
  return { calls, orders };
}
