// The reads that find one client's balances read its accounts by the whole owner key (kind, partner,
// client, asset: accounts_owner_key), so the rows PostgreSQL reads from accounts do not grow with
// other clients' accounts, of this partner or of another: a client's balances (balanceSheet(), the
// balances endpoints), and a quote's facts (findQuoteFacts(), and insertQuoteIfHeld(), which reads
// them again in the quote's own statement). Counted by the transaction's own statistics
// (pg_stat_xact_user_tables: rows fetched by index scans and read by sequential scans), on PGlite
// and PostgreSQL, with 48 other clients of two partners holding both assets. Joined to the client's
// CTE without the partner, each read scanned every client account of the asset (98 rows fetched
// here, 128 a quote in the trading bench's 64 clients).

import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { sql } from "kysely";
import { inTransaction, type Tx } from "../../db/transaction.ts";
import { pinBtcAed } from "../../testing/counted-process.ts";
import { depositDirectly, insertClient } from "../../testing/fixtures.ts";
import { startTestContext, type TestContext } from "../../testing/harness.ts";
import { findQuoteFacts, insertQuoteIfHeld, type NewQuote } from "../trading/trading-store.ts";
import { balanceSheet } from "./ledger-store.ts";

const staleAfterSeconds = 60;

describe("one client's balances are read by the accounts' whole key", () => {
  let ctx: TestContext;
  before(async () => {
    ctx = await startTestContext();
    await pinBtcAed(ctx);
  });
  after(async () => {
    await ctx.close();
  });

  const db = () => ctx.services.database.db;

  /** Rows read from accounts so far in this transaction: fetched by index scans, read by sequential ones. */
  async function accountsFetched(tx: Tx): Promise<number> {
    const { rows } = await sql<{ n: string }>`
      SELECT (coalesce(idx_tup_fetch, 0) + coalesce(seq_tup_read, 0))::text AS n FROM pg_stat_xact_user_tables
      WHERE relid = 'accounts'::regclass`.execute(tx);
    return Number(rows[0]?.n ?? 0);
  }

  /** What `read` counts of accounts' rows, in a transaction rolled back afterwards. */
  async function counted(read: (tx: Tx) => Promise<void>): Promise<number> {
    const outcome = await inTransaction(db(), async (tx) => {
      const before = await accountsFetched(tx);
      await read(tx);
      throw new Counted((await accountsFetched(tx)) - before);
    }).catch((err: unknown) => {
      if (err instanceof Counted) return err;
      throw err;
    });
    return outcome.rows;
  }

  let partnerId: string;
  let client: { id: number; partnerClientId: string };
  before(async () => {
    const partner = await ctx.addPartner({ name: "Reader" });
    const other = await ctx.addPartner({ name: "Others" });
    partnerId = partner.id;
    client = await insertClient(db(), partner.id, 1);
    await depositDirectly(db(), partner.id, client.id, "AED", 1_000_00000000n);
    await depositDirectly(db(), partner.id, client.id, "BTC", 1_00000000n);
    // Other clients' accounts of both assets: 24 of this partner, 24 of another.
    for (let i = 2; i <= 25; i++) {
      for (const owner of [partner.id, other.id]) {
        const c = await insertClient(db(), owner, i);
        await depositDirectly(db(), owner, c.id, "AED", 10_00000000n);
        await depositDirectly(db(), owner, c.id, "BTC", 1_000000n);
      }
    }
  });

  test("balanceSheet reads the client's accounts, one asset or all", async () => {
    const all = await counted(async (tx) => {
      const sheet = await balanceSheet(tx, partnerId, client.partnerClientId, null);
      const held = Object.fromEntries(
        (sheet?.lines ?? []).filter((l) => l.balance !== 0n).map((l) => [l.assetId, l.balance]),
      );
      assert.deepEqual(held, { AED: 1_000_00000000n, BTC: 1_00000000n });
    });
    const one = await counted(async (tx) => {
      const sheet = await balanceSheet(tx, partnerId, client.partnerClientId, "AED");
      assert.deepEqual(
        sheet?.lines.map((l) => [l.assetId, l.balance]),
        [["AED", 1_000_00000000n]],
      );
    });
    assert.deepEqual({ all, one }, { all: 2, one: 1 });
  });

  test("findQuoteFacts and insertQuoteIfHeld read the client's two accounts of the pair", async () => {
    let facts: Awaited<ReturnType<typeof findQuoteFacts>> | undefined;
    const read = await counted(async (tx) => {
      facts = await findQuoteFacts(
        tx,
        partnerId,
        client.partnerClientId,
        "BTC-AED",
        ctx.clock,
        staleAfterSeconds,
      );
      assert.equal(facts.client?.id, client.id);
      assert.equal(facts.baseAvailable, 1_00000000n);
      assert.equal(facts.quoteAvailable, 1_000_00000000n);
    });
    const pair = facts?.pair;
    const found = facts?.client;
    assert.ok(pair !== undefined && found !== null && found !== undefined);
    const row: NewQuote = {
      tokenHash: Buffer.alloc(32, 7),
      partnerId,
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
    // The quote goes with the transaction: nothing of this test stays.
    const stored = await counted(async (tx) => {
      const answer = await insertQuoteIfHeld(
        tx,
        row,
        {
          partnerClientId: client.partnerClientId,
          client: found,
          pair,
          staleAfterSeconds,
          need: { asset: "quote", amount: 350_00000000n },
        },
        ctx.clock,
      );
      assert.equal(answer.stored, true);
      assert.equal(answer.facts.quoteAvailable, 1_000_00000000n);
    });
    assert.deepEqual(
      { findQuoteFacts: read, insertQuoteIfHeld: stored },
      { findQuoteFacts: 2, insertQuoteIfHeld: 2 },
    );
  });
});

/** Thrown to roll the transaction back with what it counted. */
class Counted extends Error {
  readonly rows: number;
  constructor(rows: number) {
    super("counted");
    this.rows = rows;
  }
}
