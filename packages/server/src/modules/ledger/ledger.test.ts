// docs/decisions.md "Money": double entry, balances as maintained rows recomputed by the ledger check, and the
// database constraints behind each invariant. A fast-check property drives random sequences of
// deposits and withdrawals through the service.

import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { formatDecimal } from "@counterpart/protocol";
import fc from "fast-check";
import { sql } from "kysely";
import { inTransaction } from "../../db/transaction.ts";
import { insertClient } from "../../testing/fixtures.ts";
import { startTestContext, type TestContext } from "../../testing/harness.ts";
import { insertOrder } from "../orders/index.ts";
import { checkLedger, clientBalances, houseSlot, orderLegs } from "./index.ts";

describe("ledger", () => {
  let ctx: TestContext;
  before(async () => {
    ctx = await startTestContext();
  });
  after(async () => {
    await ctx.close();
  });

  test("property: any sequence of deposits and withdrawals ends at the exact sum of the accepted ones", async () => {
    let n = 0;
    const op = fc.record({
      kind: fc.constantFrom("deposit" as const, "withdrawal" as const),
      // Up to 10^6 USD in cents (USD has 2 decimal places), as scale-8 units.
      units: fc.bigInt({ min: 1n, max: 100_000_000n }).map((cents) => cents * 1_000_000n),
    });
    await fc.assert(
      fc.asyncProperty(fc.array(op, { minLength: 1, maxLength: 12 }), async (ops) => {
        n++;
        const client = await insertClient(ctx.services.database.db, ctx.partner.id, 1000 + n);
        let expected = 0n;
        for (const [i, o] of ops.entries()) {
          const req = {
            partnerClientId: client.partnerClientId,
            assetId: "USD",
            amount: o.units,
            partnerOrderRef: `p${n}-${i}`,
          };
          const result =
            o.kind === "deposit"
              ? await ctx.services.funding.deposit(ctx.partner.id, req)
              : await ctx.services.funding.withdraw(ctx.partner.id, req);
          if (o.kind === "deposit") {
            assert.ok(result.ok);
            expected += o.units;
          } else if (o.units <= expected) {
            assert.ok(result.ok, "a covered withdrawal succeeds");
            expected -= o.units;
          } else {
            assert.deepEqual(result, { ok: false, error: "insufficient_funds_for_payment" });
          }
          const balance =
            (await clientBalances(ctx.services.database.db, client.id)).get("USD")?.balance ?? 0n;
          assert.equal(balance, expected);
          assert.ok(balance >= 0n);
        }
        const view = await ctx.services.balances.get(ctx.partner.id, client.partnerClientId, "USD");
        assert.ok(view.ok);
        assert.equal(view.balance.balance, formatDecimal(expected));
      }),
      { numRuns: 25 },
    );
    assert.deepEqual(await checkLedger(ctx.services.database.db), []);
  });

  test("house accounts are split into slots by client; together they mirror the clients exactly", async () => {
    const db = ctx.services.database.db;
    const a = await insertClient(db, ctx.partner.id, 500);
    const b = await insertClient(db, ctx.partner.id, 501);
    assert.notEqual(houseSlot(a.id), houseSlot(b.id));
    for (const [c, ref] of [
      [a, "slot-a"],
      [b, "slot-b"],
    ] as const) {
      await deposit(c, ref, "SAR", 700_000_000n);
    }
    const rows = await db
      .selectFrom("accounts")
      .select(["kind", "slot", "balance"])
      .where("asset_id", "=", "SAR")
      .orderBy("kind")
      .orderBy("slot")
      .execute();
    assert.deepEqual(
      rows.filter((r) => r.kind === "omnibus").map((r) => [r.slot, r.balance]),
      [
        [Math.min(houseSlot(a.id), houseSlot(b.id)), "-7.00000000"],
        [Math.max(houseSlot(a.id), houseSlot(b.id)), "-7.00000000"],
      ],
    );
    assert.deepEqual(await checkLedger(db), []);
  });

  test("house legs spread over 64 slots: clients 16 apart post apart, and the last slot is one the schema takes", async () => {
    // 16 slots until the night of 29 November 2026: every batch of deposits then met the other process's
    // batch on a shared slot (docs/decisions.md, "House slots: 64").
    const db = ctx.services.database.db;
    const made: { id: number; partnerClientId: string }[] = [];
    for (let n = 600; made.length < 17 || made.at(-1)!.id % 64 !== 63; n++) {
      made.push(await insertClient(db, ctx.partner.id, n));
    }
    const last = made.at(-1)!;
    const sixteenBefore = made.find((c) => c.id === last.id - 16)!;
    assert.equal(houseSlot(last.id), 63);
    assert.equal(houseSlot(sixteenBefore.id), 47);
    // The partner's USD omnibus rows of the two slots (other tests' deposits may be there already).
    const omnibus = async () => {
      const rows = await db
        .selectFrom("accounts")
        .select(["slot", "balance"])
        .where("kind", "=", "omnibus")
        .where("partner_id", "=", ctx.partner.id)
        .where("asset_id", "=", "USD")
        .where("slot", "in", [47, 63])
        .execute();
      const units = new Map(rows.map((r) => [r.slot, BigInt(String(r.balance).replace(".", ""))]));
      return [units.get(47) ?? 0n, units.get(63) ?? 0n];
    };
    const [before47, before63] = await omnibus();
    await deposit(last, "slot-63", "USD", 100_000_000n);
    await deposit(sixteenBefore, "slot-47", "USD", 200_000_000n);
    assert.deepEqual(await omnibus(), [before47! - 200_000_000n, before63! - 100_000_000n]);
    assert.deepEqual(await checkLedger(db), []);
  });

  test("the ledger check names an account whose balance differs from its postings", async () => {
    const db = ctx.services.database.db;
    const client = await insertClient(db, ctx.partner.id, 1);
    const dep = await ctx.services.funding.deposit(ctx.partner.id, {
      partnerClientId: client.partnerClientId,
      assetId: "AED",
      amount: 500_000_000n,
      partnerOrderRef: "tamper",
    });
    assert.ok(dep.ok);
    assert.deepEqual(await checkLedger(db), []);
    await sql`UPDATE accounts SET balance = balance + 1 WHERE kind = 'client' AND client_id = ${client.id}`.execute(
      db,
    );
    const diffs = await checkLedger(db);
    const account = diffs.find((d) => d.kind === "account_balance");
    assert.ok(account);
    assert.equal(account.asset_id, "AED");
    assert.equal(account.recorded, "6.00000000");
    assert.equal(account.from_postings, "5.00000000");
    assert.match(account.account ?? "", new RegExp(`^client:${ctx.partner.id}:client-${client.id}:AED$`));
    assert.ok(diffs.some((d) => d.kind === "asset_unbalanced" && d.asset_id === "AED"));
    await sql`UPDATE accounts SET balance = balance - 1 WHERE kind = 'client' AND client_id = ${client.id}`.execute(
      db,
    );
    assert.deepEqual(await checkLedger(db), []);
  });

  test("the database refuses what the service never does: negative balances, unbalanced orders, NaN, zero", async () => {
    const db = ctx.services.database.db;
    const client = await insertClient(db, ctx.partner.id, 2);
    const negative = sql`INSERT INTO accounts (kind, partner_id, client_id, asset_id, balance) VALUES ('client', ${ctx.partner.id}, ${client.id}, 'EUR', -1)`;
    await assert.rejects(negative.execute(db), /accounts_client_not_negative|check/i);

    const newOrder = (tx: Parameters<Parameters<typeof inTransaction>[1]>[0], ref: string) =>
      insertOrder(tx, {
        partner_id: ctx.partner.id,
        client_id: client.id,
        partner_order_ref: ref,
        type: "deposit",
        source: "bank",
        status: "completed",
        price: null,
        debit: "1",
        debit_asset_id: "EUR",
        credit: null,
        credit_asset_id: null,
        fee: "0",
        fee_asset_id: "EUR",
        vat: "0",
      });
    // Postings that do not sum to zero per order are refused at commit by the constraint trigger.
    await assert.rejects(
      inTransaction(db, async (tx) => {
        const o = await newOrder(tx, "unbalanced");
        const acct = await tx
          .insertInto("accounts")
          .values({
            kind: "client",
            partner_id: ctx.partner.id,
            client_id: client.id,
            asset_id: "EUR",
            balance: "1",
          })
          .returning("id")
          .executeTakeFirstOrThrow();
        await tx
          .insertInto("postings")
          .values({ order_id: o.id, account_id: acct.id, asset_id: "EUR", amount: "1" })
          .execute();
      }),
      /do not balance/,
    );
    assert.equal(
      (
        await sql<{
          n: number;
        }>`SELECT count(*)::int8 AS n FROM orders WHERE partner_order_ref = 'unbalanced'`.execute(db)
      ).rows[0]?.n,
      0,
    );

    for (const bad of ["'NaN'", "0", "-1"]) {
      await assert.rejects(
        sql`INSERT INTO orders (partner_id, client_id, partner_order_ref, type, source, status, debit, debit_asset_id, fee_asset_id)
            VALUES (${ctx.partner.id}, ${client.id}, ${`bad-${bad}`}, 'deposit', 'bank', 'completed', ${sql.raw(bad)}::numeric, 'EUR', 'EUR')`.execute(
          db,
        ),
        /check/i,
        bad,
      );
    }
    // The legs are checked before any SQL is built: they balance per asset, one client at most.
    assert.throws(
      () => orderLegs([{ kind: "client", clientId: client.id, assetId: "EUR", amount: 5n }], 0),
      /do not balance/,
    );
    assert.throws(
      () =>
        orderLegs(
          [
            { kind: "client", clientId: client.id, assetId: "EUR", amount: 5n },
            { kind: "client", clientId: client.id + 1, assetId: "EUR", amount: -5n },
          ],
          0,
        ),
      /one order, one client/,
    );
  });

  test("keys say more than existence: an order's client is its partner's, a posting's asset is its account's", async () => {
    const db = ctx.services.database.db;
    const other = await ctx.addPartner({ name: "Partner of the key test" });
    const client = await insertClient(db, ctx.partner.id, 4);
    const before = await ledgerRows();
    // Another partner's order for this partner's client.
    await assert.rejects(
      sql`INSERT INTO orders (partner_id, client_id, partner_order_ref, type, source, status, debit, debit_asset_id, fee_asset_id)
          VALUES (${other.id}, ${client.id}, 'foreign-client', 'deposit', 'bank', 'completed', 1, 'EUR', 'EUR')`.execute(
        db,
      ),
      /orders_client_fkey/,
    );
    // Balanced postings, one of them on an account of another asset.
    const order = await deposit(client, "keys");
    const afterDeposit = await ledgerRows();
    const { clientAccount, house } = await eurAccounts(client.id);
    await assert.rejects(
      sql`INSERT INTO postings (order_id, account_id, asset_id, amount)
          VALUES (${order}, ${clientAccount}, 'USD', 1), (${order}, ${house}, 'USD', -1)`.execute(db),
      /postings_account_fkey/,
    );
    assert.deepEqual(await ledgerRows(), afterDeposit);
    assert.notDeepEqual(afterDeposit, before);
    assert.deepEqual(await checkLedger(db), []);
  });

  test("postings balance per order and asset in every statement, and are never updated or deleted", async () => {
    const db = ctx.services.database.db;
    const client = await insertClient(db, ctx.partner.id, 5);
    const first = await deposit(client, "append-1");
    const second = await deposit(client, "append-2");
    const { clientAccount, house } = await eurAccounts(client.id);
    const before = await ledgerRows();
    // The statement sums to zero, but each order alone does not.
    await assert.rejects(
      sql`INSERT INTO postings (order_id, account_id, asset_id, amount)
          VALUES (${first}, ${clientAccount}, 'EUR', 1), (${second}, ${house}, 'EUR', -1)`.execute(db),
      /do not balance/,
    );
    // Two statements that balance only together: each is refused on its own.
    await assert.rejects(
      inTransaction(db, async (tx) => {
        await sql`INSERT INTO postings (order_id, account_id, asset_id, amount) VALUES (${first}, ${clientAccount}, 'EUR', 1)`.execute(
          tx,
        );
        await sql`INSERT INTO postings (order_id, account_id, asset_id, amount) VALUES (${first}, ${house}, 'EUR', -1)`.execute(
          tx,
        );
      }),
      /do not balance/,
    );
    await assert.rejects(
      sql`UPDATE postings SET amount = amount * 2 WHERE order_id = ${first}`.execute(db),
      /append-only/,
    );
    await assert.rejects(sql`DELETE FROM postings WHERE order_id = ${first}`.execute(db), /append-only/);
    assert.deepEqual(await ledgerRows(), before);
    assert.deepEqual(await checkLedger(db), []);
  });

  /** A deposit for the client (1 EUR unless told); the order's id. */
  async function deposit(
    client: { partnerClientId: string },
    ref: string,
    assetId = "EUR",
    amount = 100_000_000n,
  ): Promise<number> {
    const r = await ctx.services.funding.deposit(ctx.partner.id, {
      partnerClientId: client.partnerClientId,
      assetId,
      amount,
      partnerOrderRef: ref,
    });
    assert.ok(r.ok);
    return r.order.id;
  }

  /** The client's EUR account and the house account of its slot. */
  async function eurAccounts(clientId: number): Promise<{ clientAccount: number; house: number }> {
    const rows = await ctx.services.database.db
      .selectFrom("accounts")
      .select(["id", "kind"])
      .where("partner_id", "=", ctx.partner.id)
      .where("asset_id", "=", "EUR")
      .where((eb) =>
        eb.or([
          eb("client_id", "=", clientId),
          eb.and([eb("kind", "=", "omnibus"), eb("slot", "=", houseSlot(clientId))]),
        ]),
      )
      .execute();
    return {
      clientAccount: rows.find((a) => a.kind === "client")!.id,
      house: rows.find((a) => a.kind === "omnibus")!.id,
    };
  }

  async function ledgerRows(): Promise<string> {
    const { rows } = await sql<{ t: string }>`
      SELECT coalesce((SELECT string_agg(p::text, ';' ORDER BY p.id) FROM postings p), '') || '|' ||
             coalesce((SELECT string_agg(a::text, ';' ORDER BY a.id) FROM accounts a), '') || '|' ||
             coalesce((SELECT string_agg(o::text, ';' ORDER BY o.id) FROM orders o), '') AS t
    `.execute(ctx.services.database.db);
    return rows[0]!.t;
  }

  test("post_legs() checks its own lock order: legs out of order are refused, and nothing is posted", async () => {
    const db = ctx.services.database.db;
    const client = await insertClient(db, ctx.partner.id, 6);
    await deposit(client, "lock-order-1");
    await deposit(client, "lock-order-2", "USD");
    const order = await inTransaction(db, (tx) =>
      insertOrder(tx, {
        partner_id: ctx.partner.id,
        client_id: client.id,
        partner_order_ref: "out-of-order",
        type: "deposit",
        source: "bank",
        status: "completed",
        price: null,
        debit: "1",
        debit_asset_id: "EUR",
        credit: null,
        credit_asset_id: null,
        fee: "0",
        fee_asset_id: "EUR",
        vat: "0",
      }),
    );
    type LegRow = [kind: string, clientId: number | null, assetId: string, amount: string];
    const post = (legs: LegRow[]) =>
      sql<{ posted: boolean }>`
        SELECT post_legs(${ctx.partner.id}::uuid, ${order.id}::bigint, ${houseSlot(client.id)}::smallint,
                         ${legs.map((l) => l[0])}::text[], ${legs.map((l) => l[1])}::bigint[],
                         ${legs.map((l) => l[2])}::text[], ${legs.map((l) => l[3])}::numeric[]) AS posted
      `.execute(db);
    const before = await ledgerRows();
    const wrong: [string, LegRow[]][] = [
      [
        "a house leg before the client's",
        [
          ["omnibus", null, "EUR", "-1"],
          ["client", client.id, "EUR", "1"],
        ],
      ],
      [
        "the client's legs not by asset",
        [
          ["client", client.id, "USD", "-1"],
          ["client", client.id, "EUR", "1"],
          ["omnibus", null, "EUR", "-1"],
          ["omnibus", null, "USD", "1"],
        ],
      ],
      [
        "house legs not by kind",
        [
          ["client", client.id, "EUR", "-2"],
          ["fee_revenue", null, "EUR", "1"],
          ["omnibus", null, "EUR", "1"],
        ],
      ],
    ];
    for (const [what, legs] of wrong) {
      await assert.rejects(post(legs), /post_legs: legs out of lock order/, what);
    }
    await assert.rejects(
      post([
        ["client", client.id, "EUR", "-1"],
        ["client", client.id + 1, "USD", "1"],
      ]),
      /one client/,
    );
    assert.equal(await ledgerRows(), before, "nothing written");
    assert.equal(
      (
        await sql<{
          n: number;
        }>`SELECT count(*)::int8 AS n FROM postings WHERE order_id = ${order.id}`.execute(db)
      ).rows[0]?.n,
      0,
    );
    // The same legs in lock order are posted.
    const posted = await post([
      ["client", client.id, "EUR", "-1"],
      ["client", client.id, "USD", "1"],
      ["omnibus", null, "EUR", "1"],
      ["omnibus", null, "USD", "-1"],
    ]);
    assert.deepEqual(posted.rows, [{ posted: true }]);
    assert.deepEqual(await checkLedger(db), []);
  });

  test("fund_order() takes its legs from the service and refuses legs that do not move the order's amount", async () => {
    const db = ctx.services.database.db;
    const client = await insertClient(db, ctx.partner.id, 7);
    const slot = houseSlot(client.id);
    const fund = (ref: string, clientAmount: string, houseAmount: string) =>
      sql`SELECT * FROM fund_order(${ctx.partner.id}, ${client.id}, ${ref}, 'deposit', 'EUR', 1::numeric,
                                   ${slot}::smallint, ${["client", "omnibus"]}::text[], ${[client.id, null]}::bigint[],
                                   ${["EUR", "EUR"]}::text[], ${[clientAmount, houseAmount]}::numeric[])`.execute(
        db,
      );
    const before = await ledgerRows();
    await assert.rejects(fund("fund-legs-2", "2", "-2"), /fund_order: the legs do not move/);
    await assert.rejects(fund("fund-legs-minus", "-1", "1"), /fund_order: the legs do not move/);
    assert.equal(await ledgerRows(), before, "nothing written");
    const { rows } = await fund("fund-legs-1", "1", "-1");
    assert.equal(rows.length, 1);
    assert.equal((await clientBalances(db, client.id)).get("EUR")?.balance, 100_000_000n);
    assert.deepEqual(await checkLedger(db), []);
  });

  test("a duplicate (partner, partner_order_ref) is refused by the database", async () => {
    const db = ctx.services.database.db;
    const client = await insertClient(db, ctx.partner.id, 3);
    const insert = (ref: string) =>
      sql`INSERT INTO orders (partner_id, client_id, partner_order_ref, type, source, status, debit, debit_asset_id, fee_asset_id)
          VALUES (${ctx.partner.id}, ${client.id}, ${ref}, 'deposit', 'bank', 'completed', 1, 'EUR', 'EUR')`.execute(
        db,
      );
    await insert("dup");
    await assert.rejects(insert("dup"), /orders_partner_order_ref_key|duplicate/);
  });
});
