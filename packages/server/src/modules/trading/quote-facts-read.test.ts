// A quote's facts (findQuoteFacts(), and insertQuoteIfHeld() that reads them again in the quote's
// own statement) read the client's two accounts of the pair by the whole owner key: the rows
// PostgreSQL fetches from accounts do not grow with other clients' accounts, of this partner or of
// another. Counted by the transaction's own statistics (pg_stat_xact_user_tables.idx_tup_fetch),
// on PGlite and PostgreSQL. Joined to the client's CTE instead, the read scanned every client
// account of each asset (128 rows a quote in the trading bench's 64 clients).

import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { sql } from "kysely";
import { inTransaction, type Tx } from "../../db/transaction.ts";
import { pinBtcAed } from "../../testing/counted-process.ts";
import { insertClient } from "../../testing/fixtures.ts";
import { startTestContext, type TestContext } from "../../testing/harness.ts";
import { fundingLegs } from "../funding/funding-legs.ts";
import { fundOrder } from "../funding/funding-store.ts";
import { findQuoteFacts, insertQuoteIfHeld, type NewQuote } from "./trading-store.ts";

const staleAfterSeconds = 60;

describe("a quote's facts read its client's accounts by their key", () => {
  let ctx: TestContext;
  before(async () => {
    ctx = await startTestContext();
    await pinBtcAed(ctx);
  });
  after(async () => {
    await ctx.close();
  });

  const db = () => ctx.services.database.db;

  async function fund(partnerId: string, clientId: number, assetId: string, amount: bigint) {
    const { slot, legs } = fundingLegs("deposit", clientId, assetId, amount);
    await fundOrder(db(), {
      partnerId,
      clientId,
      ref: `fund-${clientId}-${assetId}`,
      type: "deposit",
      assetId,
      amount,
      legs,
      slot,
    });
  }

  /** Rows fetched from accounts by index scans so far in this transaction. */
  async function accountsFetched(tx: Tx): Promise<number> {
    const { rows } = await sql<{ n: string }>`
      SELECT coalesce(idx_tup_fetch, 0)::text AS n FROM pg_stat_xact_user_tables
      WHERE relid = 'accounts'::regclass`.execute(tx);
    return Number(rows[0]?.n ?? 0);
  }

  test("findQuoteFacts and insertQuoteIfHeld fetch the client's two accounts, whatever other clients hold", async () => {
    const partner = await ctx.addPartner({ name: "Reader" });
    const other = await ctx.addPartner({ name: "Others" });
    const client = await insertClient(db(), partner.id, 1);
    await fund(partner.id, client.id, "AED", 1_000_00000000n);
    await fund(partner.id, client.id, "BTC", 1_00000000n);
    // Other clients' accounts of both assets: 24 of this partner, 24 of another.
    for (let i = 2; i <= 25; i++) {
      for (const owner of [partner.id, other.id]) {
        const c = await insertClient(db(), owner, i);
        await fund(owner, c.id, "AED", 10_00000000n);
        await fund(owner, c.id, "BTC", 1_000000n);
      }
    }

    const counted = await inTransaction(db(), async (tx) => {
      const before = await accountsFetched(tx);
      const facts = await findQuoteFacts(
        tx,
        partner.id,
        client.partnerClientId,
        "BTC-AED",
        ctx.clock,
        staleAfterSeconds,
      );
      const read = (await accountsFetched(tx)) - before;
      assert.equal(facts.client?.id, client.id);
      assert.equal(facts.baseAvailable, 1_00000000n);
      assert.equal(facts.quoteAvailable, 1_000_00000000n);
      const pair = facts.pair;
      assert.ok(pair !== undefined && facts.client !== null);

      const row: NewQuote = {
        tokenHash: Buffer.alloc(32, 7),
        partnerId: partner.id,
        clientId: client.id,
        pairId: pair.id,
        side: "buy",
        price: pair.buy,
        baseAmount: 100000n,
        quoteAmount: 350_00000000n,
        fee: 0n,
        vat: 0n,
        vatPercentage: null,
        lifetimeSeconds: pair.lifetime_s,
      };
      const middle = await accountsFetched(tx);
      const { stored, facts: again } = await insertQuoteIfHeld(
        tx,
        row,
        {
          partnerClientId: client.partnerClientId,
          client: facts.client,
          pair,
          staleAfterSeconds,
          need: { asset: "quote", amount: 350_00000000n },
        },
        ctx.clock,
      );
      const storedRead = (await accountsFetched(tx)) - middle;
      assert.equal(stored, true);
      assert.equal(again.quoteAvailable, 1_000_00000000n);
      // Nothing of this test stays: the quote goes with the transaction.
      throw new Counted(read, storedRead);
    }).catch((err: unknown) => {
      if (err instanceof Counted) return err;
      throw err;
    });
    assert.deepEqual(
      { findQuoteFacts: counted.read, insertQuoteIfHeld: counted.storedRead },
      { findQuoteFacts: 2, insertQuoteIfHeld: 2 },
    );
  });
});

/** Thrown to roll the transaction back with what it counted. */
class Counted extends Error {
  readonly read: number;
  readonly storedRead: number;
  constructor(read: number, storedRead: number) {
    super("counted");
    this.read = read;
    this.storedRead = storedRead;
  }
}
