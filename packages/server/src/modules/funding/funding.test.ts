// Deposits and withdrawals: the order rows (debit and credit per type), the funding codes of
// docs/errors.md and their order of checks, the amounts of docs/decisions.md ("Money"). Every
// failure is checked to have changed nothing.

import assert from "node:assert/strict";
import { after, before, beforeEach, describe, test } from "node:test";
import { sql } from "kysely";
import { insertClient } from "../../testing/fixtures.ts";
import { startTestContext, type TestContext } from "../../testing/harness.ts";
import { type MoneyState, moneyState } from "../../testing/money-state.ts";
import { checkLedger } from "../ledger/index.ts";

describe("deposits and withdrawals", () => {
  let ctx: TestContext;
  let refN = 0;
  const ref = () => `ref-${++refN}`;
  before(async () => {
    ctx = await startTestContext();
    const db = ctx.services.database.db;
    await insertClient(db, ctx.partner.id, 1);
    await insertClient(db, ctx.partner.id, 2, { status: "under_review" });
    await insertClient(db, ctx.partner.id, 3, { active: false });
    await insertClient(db, ctx.partner.id, 4, { status: "rejected", active: false });
  });
  after(async () => {
    await ctx.close();
  });

  const deposit = (body: Record<string, unknown>) =>
    ctx.signed({ method: "POST", url: "/v1/partner/deposits", body });
  const withdraw = (body: Record<string, unknown>) =>
    ctx.signed({ method: "POST", url: "/v1/partner/withdrawals", body });
  const body = (over: Record<string, unknown> = {}) => ({
    partner_client_id: "client-1",
    asset_id: "AED",
    amount: "10",
    partner_order_ref: ref(),
    ...over,
  });
  async function balance(asset: string, client = "client-1"): Promise<string> {
    const res = await ctx.signed({
      method: "GET",
      url: `/v1/partner/balances/${asset}?partner_client_id=${client}`,
    });
    assert.equal(res.statusCode, 200, res.body);
    return res.json().result.available_balance;
  }

  let before_: MoneyState;
  beforeEach(async () => {
    before_ = await moneyState(ctx.services.database.db);
  });
  /**
   * A verified client of the test's own, for a test that checks exact balances: its figures then
   * depend on nothing another test did, whatever the order.
   */
  async function ownClient(n: number): Promise<string> {
    return (await insertClient(ctx.services.database.db, ctx.partner.id, n)).partnerClientId;
  }
  async function assertUnchanged(): Promise<void> {
    assert.deepEqual(await moneyState(ctx.services.database.db), before_);
  }
  async function assertError(
    res: { statusCode: number; json(): unknown },
    status: number,
    code: number,
    msg?: string,
  ) {
    assert.equal(res.statusCode, status);
    const b = res.json() as { code: number; msg: string; msg_detail: unknown };
    assert.equal(b.code, code);
    if (msg !== undefined) assert.equal(b.msg, msg);
    if (code !== 422) assert.equal(b.msg_detail, null);
    await assertUnchanged();
  }

  test("a deposit is one completed bank order with debit = amount; the balance rises before the response", async () => {
    const client = await ownClient(11);
    const r = ref();
    const res = await deposit(body({ partner_client_id: client, amount: "100.5", partner_order_ref: r }));
    assert.equal(res.statusCode, 200);
    const order = res.json().result;
    assert.equal(order.type, "deposit");
    assert.equal(order.source, "bank");
    assert.equal(order.status, "completed");
    assert.equal(order.partner_order_ref, r);
    assert.equal(order.partner_client_id, client);
    assert.equal(order.debit, "100.50000000");
    assert.equal(order.debit_asset_id, "AED");
    assert.equal(order.credit, null);
    assert.equal(order.credit_asset_id, null);
    assert.equal(order.price, null);
    assert.equal(order.fee, "0E-8");
    assert.equal(order.vat, "0E-8");
    assert.equal(order.fee_asset_id, "AED");
    assert.match(order.order_no, /^ORD-\d{8}-\d{6,}$/);
    assert.match(order.created_at, /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/);
    assert.equal(order.transitioned_at, order.created_at);
    assert.equal(await balance("AED", client), "100.50000000");
    assert.deepEqual(await checkLedger(ctx.services.database.db), []);
  });

  test("a withdrawal is one completed bank order with credit = amount; the balance falls", async () => {
    const client = await ownClient(12);
    assert.equal((await deposit(body({ partner_client_id: client, amount: "100.5" }))).statusCode, 200);
    const res = await withdraw(body({ partner_client_id: client, amount: "0.5" }));
    assert.equal(res.statusCode, 200);
    const order = res.json().result;
    assert.equal(order.type, "withdrawal");
    assert.equal(order.status, "completed");
    assert.equal(order.credit, "0.50000000");
    assert.equal(order.credit_asset_id, "AED");
    assert.equal(order.debit, null);
    assert.equal(order.debit_asset_id, null);
    assert.equal(await balance("AED", client), "100.00000000");
  });

  test("withdrawing more than the available balance is 3005 'Insufficient funds for payment'; nothing changes", async () => {
    const client = await ownClient(13);
    assert.equal((await deposit(body({ partner_client_id: client, amount: "100" }))).statusCode, 200);
    before_ = await moneyState(ctx.services.database.db);
    await assertError(
      await withdraw(body({ partner_client_id: client, amount: "100.01" })),
      400,
      3005,
      "Insufficient funds for payment",
    );
    assert.equal(await balance("AED", client), "100.00000000");
    await assertError(
      await withdraw(body({ partner_client_id: client, asset_id: "USD", amount: "1" })),
      400,
      3005,
    );
  });

  test("exactly the available balance can be withdrawn, to zero (written 0E-8)", async () => {
    const client = await ownClient(14);
    await deposit(body({ partner_client_id: client, asset_id: "EUR", amount: "7.25" }));
    const res = await withdraw(body({ partner_client_id: client, asset_id: "EUR", amount: "7.25" }));
    assert.equal(res.statusCode, 200);
    assert.equal(await balance("EUR", client), "0E-8");
  });

  test("amounts: plain and scientific notation, trailing zeros; exact to 8 places", async () => {
    for (const [amount, debit] of [
      ["1E-2", "0.01000000"],
      ["1.5e2", "150.00000000"],
      ["0.10000000000", "0.10000000"],
      ["12345678.12", "12345678.12000000"],
    ]) {
      const res = await deposit(body({ asset_id: "SAR", amount }));
      assert.equal(res.statusCode, 200, amount);
      assert.equal(res.json().result.debit, debit, amount);
    }
  });

  test("invalid amounts are a 422 at [body, amount]; nothing changes", async () => {
    const cases: [unknown, string][] = [
      ["0", "greater_than"],
      ["-5", "greater_than"],
      ["0E-8", "greater_than"],
      ["1.123456789", "decimal_max_places"],
      ["1e-9", "decimal_max_places"],
      ["0.000000001", "decimal_max_places"],
      ["abc", "decimal_parsing"],
      ["1,5", "decimal_parsing"],
      [" 1", "decimal_parsing"],
      ["0x10", "decimal_parsing"],
      ["NaN", "decimal_parsing"],
      ["Infinity", "decimal_parsing"],
      ["1e31", "decimal_parsing"],
      ["1e400", "decimal_parsing"],
      ["1000000000000000.00000001", "less_than_equal"],
      [10, "string_type"],
      [null, "string_type"],
    ];
    for (const [amount, type] of cases) {
      const res = await deposit(body({ amount }));
      assert.equal(res.statusCode, 422, String(amount));
      const detail = res.json().msg_detail;
      assert.deepEqual(detail[0].loc, ["body", "amount"], String(amount));
      assert.equal(detail[0].type, type, String(amount));
      const w = await withdraw(body({ amount }));
      assert.equal(w.statusCode, 422, String(amount));
    }
    await assertUnchanged();
  });

  test("amounts up to 8 decimal places whatever the asset's decimal_places: kept exactly, written at scale 8", async () => {
    const db = ctx.services.database.db;
    await insertClient(db, ctx.partner.id, 5);
    await db
      .insertInto("assets")
      .values({
        id: "KRW",
        type: "fiat",
        name_en: "Won",
        decimal_places: 0,
        published: true,
        depositable: true,
        withdrawable: true,
        usd_rate: null,
      })
      .execute();
    const order = async (res: {
      statusCode: number;
      body: string;
      json(): { result: Record<string, unknown> };
    }) => {
      assert.equal(res.statusCode, 200, res.body);
      const o = res.json().result;
      // The order reads back as it was answered.
      const read = await ctx.signed({ method: "GET", url: `/v1/partner/orders/${o.id}` });
      assert.deepEqual(read.json().result, o);
      return o;
    };
    for (const asset of ["AED", "KRW"]) {
      const five = { partner_client_id: "client-5", asset_id: asset };
      const deposits: [string, string][] = [
        ["100.12345678", "100.12345678"],
        ["0.0000001", "1.0E-7"],
        ["1E-8", "1E-8"],
      ];
      for (const [amount, debit] of deposits) {
        const o = await order(await deposit(body({ ...five, amount })));
        assert.equal(o.debit, debit, amount);
        assert.equal(o.debit_asset_id, asset);
        assert.equal(o.credit, null);
      }
      assert.equal(await balance(asset, "client-5"), "100.12345689");
      const withdrawals: [string, string, string][] = [
        ["0.0000001", "1.0E-7", "100.12345679"],
        ["1e-8", "1E-8", "100.12345678"],
        ["100.12345678", "100.12345678", "0E-8"],
      ];
      for (const [amount, credit, left] of withdrawals) {
        const o = await order(await withdraw(body({ ...five, amount })));
        assert.equal(o.credit, credit, amount);
        assert.equal(o.credit_asset_id, asset);
        assert.equal(o.debit, null);
        assert.equal(await balance(asset, "client-5"), left, amount);
      }
      // A ninth decimal place is still a 422, and changes nothing.
      before_ = await moneyState(db);
      for (const send of [deposit, withdraw]) {
        const res = await send(body({ ...five, amount: "0.000000001" }));
        assert.equal(res.statusCode, 422);
        assert.deepEqual(res.json().msg_detail, [
          {
            loc: ["body", "amount"],
            msg: "Decimal input should have no more than 8 decimal places",
            type: "decimal_max_places",
          },
        ]);
      }
      await assertUnchanged();
    }
    // The postings hold the amounts exactly, and every balance is its postings' sum.
    const { rows } = await sql<{ amount: string }>`
      SELECT p.amount::text AS amount FROM postings p JOIN accounts a ON a.id = p.account_id
      WHERE a.kind = 'client' AND a.client_id = (SELECT id FROM clients WHERE partner_client_id = 'client-5'
        AND partner_id = ${ctx.partner.id}) AND a.asset_id = 'AED' ORDER BY p.id`.execute(db);
    assert.deepEqual(
      rows.map((r) => r.amount),
      ["100.12345678", "0.00000010", "0.00000001", "-0.00000010", "-0.00000001", "-100.12345678"],
    );
    assert.deepEqual(await checkLedger(db), []);
    // A fine amount is no reason to skip the other rules: the client is still judged first.
    before_ = await moneyState(db);
    await assertError(await deposit(body({ partner_client_id: "nobody", amount: "1.005" })), 400, 2008);
    await assertError(await deposit(body({ asset_id: "XYZ", amount: "1.123" })), 400, 2012);
  });

  test("missing fields are a 422 each; partner_order_ref is required and 1..255 characters", async () => {
    const res = await deposit({});
    assert.equal(res.statusCode, 422);
    assert.deepEqual(
      res
        .json()
        .msg_detail.map((d: { loc: string[] }) => d.loc[1])
        .sort(),
      ["amount", "asset_id", "partner_client_id", "partner_order_ref"],
    );
    for (const r of ["", "x".repeat(256)]) {
      const bad = await withdraw(body({ partner_order_ref: r }));
      assert.equal(bad.statusCode, 422);
      assert.deepEqual(bad.json().msg_detail[0].loc, ["body", "partner_order_ref"]);
    }
    const ok = await deposit(body({ partner_order_ref: "r".repeat(255) }));
    assert.equal(ok.statusCode, 200);
  });

  test("client errors: 2008 unknown or another partner's, 2009 not verified, 2010 deactivated", async () => {
    await assertError(await deposit(body({ partner_client_id: "nobody" })), 400, 2008, "Invalid client ID");
    await assertError(
      await deposit(body({ partner_client_id: "client-2" })),
      400,
      2009,
      "The client is not yet verified",
    );
    await assertError(
      await deposit(body({ partner_client_id: "client-3" })),
      400,
      2010,
      "The client is deactivated",
    );
    // Not verified is told before deactivated.
    await assertError(await withdraw(body({ partner_client_id: "client-4" })), 400, 2009);
    const other = await ctx.addPartner();
    const res = await ctx.signed({
      method: "POST",
      url: "/v1/partner/deposits",
      partner: other,
      body: body(),
    });
    await assertError(res, 400, 2008);
  });

  test("2012 for each asset condition: missing, crypto, unpublished, not depositable, not withdrawable", async () => {
    const db = ctx.services.database.db;
    await db
      .insertInto("assets")
      .values([
        {
          id: "GBP",
          type: "fiat",
          name_en: "Pound",
          decimal_places: 2,
          published: false,
          depositable: true,
          withdrawable: true,
          usd_rate: null,
        },
        {
          id: "CHF",
          type: "fiat",
          name_en: "Franc",
          decimal_places: 2,
          published: true,
          depositable: false,
          withdrawable: true,
          usd_rate: null,
        },
        {
          id: "JPY",
          type: "fiat",
          name_en: "Yen",
          decimal_places: 0,
          published: true,
          depositable: true,
          withdrawable: false,
          usd_rate: null,
        },
      ])
      .execute();
    before_ = await moneyState(db);
    for (const asset of ["XYZ", "aed", "BTC", "USDT", "GBP", "CHF"]) {
      await assertError(await deposit(body({ asset_id: asset })), 400, 2012, "Invalid asset");
    }
    const jpy = await deposit(body({ asset_id: "JPY", amount: "5" }));
    assert.equal(jpy.statusCode, 200);
    before_ = await moneyState(db);
    for (const asset of ["XYZ", "BTC", "GBP", "JPY"]) {
      await assertError(await withdraw(body({ asset_id: asset, amount: "1" })), 400, 2012);
    }
    const chf = await withdraw(body({ asset_id: "CHF", amount: "1" }));
    assert.equal(chf.statusCode, 400);
    assert.equal(chf.json().code, 3005, "withdrawable CHF passes the asset rule and meets the funds rule");
  });

  test("2020 (HTTP 409) for a reused reference across types; the existing order is not returned", async () => {
    const r = ref();
    assert.equal((await deposit(body({ partner_order_ref: r }))).statusCode, 200);
    before_ = await moneyState(ctx.services.database.db);
    await assertError(
      await deposit(body({ partner_order_ref: r })),
      409,
      2020,
      "An order with this partner_order_ref already exists",
    );
    await assertError(await withdraw(body({ partner_order_ref: r, amount: "1" })), 409, 2020);
    // Another body with the same reference is still 2020.
    await assertError(
      await deposit(body({ partner_order_ref: r, amount: "99", asset_id: "USD" })),
      409,
      2020,
    );
    // References are compared byte for byte.
    assert.equal((await deposit(body({ partner_order_ref: r.toUpperCase() }))).statusCode, 200);
    // Another partner has its own namespace.
    const other = await ctx.addPartner();
    await insertClient(ctx.services.database.db, other.id, 50);
    const theirs = await ctx.signed({
      method: "POST",
      url: "/v1/partner/deposits",
      partner: other,
      body: body({ partner_client_id: "client-50", partner_order_ref: r }),
    });
    assert.equal(theirs.statusCode, 200);
  });

  test("the reference is checked before the client and the funds (docs/errors.md, order of checks)", async () => {
    const r = ref();
    assert.equal((await deposit(body({ partner_order_ref: r, amount: "3" }))).statusCode, 200);
    before_ = await moneyState(ctx.services.database.db);
    await assertError(await withdraw(body({ partner_order_ref: r, partner_client_id: "nobody" })), 409, 2020);
    await assertError(await withdraw(body({ partner_order_ref: r, amount: "1000000" })), 409, 2020);
    // Before every other rule: the reference is looked up only when another check fails, and a
    // taken one is still 2020 whatever else is wrong.
    const unverified = { partnerClientId: "client-2" }; // under review
    const inactive = { partnerClientId: "client-3" }; // deactivated
    await assertError(
      await deposit(body({ partner_order_ref: r, partner_client_id: unverified.partnerClientId })),
      409,
      2020,
    );
    await assertError(
      await deposit(body({ partner_order_ref: r, partner_client_id: inactive.partnerClientId })),
      409,
      2020,
    );
    await assertError(await deposit(body({ partner_order_ref: r, asset_id: "XYZ" })), 409, 2020);
    await assertError(await deposit(body({ partner_order_ref: r, asset_id: "BTC" })), 409, 2020);
    // And with a fresh reference the same requests meet their own rule.
    await assertError(await deposit(body({ partner_client_id: unverified.partnerClientId })), 400, 2009);
    await assertError(await deposit(body({ partner_client_id: inactive.partnerClientId })), 400, 2010);
    await assertError(await deposit(body({ asset_id: "BTC" })), 400, 2012);
    // Client before asset, asset before funds.
    await assertError(
      await withdraw(body({ partner_client_id: "nobody", asset_id: "XYZ", amount: "1000000" })),
      400,
      2008,
    );
    await assertError(await withdraw(body({ asset_id: "XYZ", amount: "1000000" })), 400, 2012);
  });

  test("a failed request does not consume its reference: the same reference works afterwards", async () => {
    const r = ref();
    await assertError(await withdraw(body({ partner_order_ref: r, amount: "100000" })), 400, 3005);
    await assertError(
      await deposit(body({ partner_order_ref: r, partner_client_id: "client-2" })),
      400,
      2009,
    );
    const ok = await deposit(body({ partner_order_ref: r, amount: "1" }));
    assert.equal(ok.statusCode, 200);
    assert.equal(ok.json().result.partner_order_ref, r);
  });

  test("the ledger is balanced after whichever of the tests above ran before this one", async () => {
    assert.deepEqual(await checkLedger(ctx.services.database.db), []);
  });
});

describe("deposits across a schema change", () => {
  // A process keeps prepared statements per PostgreSQL connection. A migration that adds a column to
  // orders must not break the statements of processes still running the previous version.
  let ctx: TestContext;
  before(async () => {
    ctx = await startTestContext();
    await insertClient(ctx.services.database.db, ctx.partner.id, 1);
  });
  after(async () => {
    await ctx.close();
  });

  test("orders gains a column while the service runs: deposits go on", async () => {
    const db = ctx.services.database.db;
    const deposit = async (ref: string) => {
      const res = await ctx.signed({
        method: "POST",
        url: "/v1/partner/deposits",
        body: { partner_client_id: "client-1", asset_id: "AED", amount: "1", partner_order_ref: ref },
      });
      assert.equal(res.statusCode, 200, res.body);
    };
    // Sequential requests: each connection of the pool that serves one prepares the statement.
    for (let i = 0; i < 8; i++) await deposit(`before-${i}`);
    await sql`ALTER TABLE orders ADD COLUMN note text`.execute(db);
    for (let i = 0; i < 8; i++) await deposit(`after-${i}`);
    const { rows } = await sql<{ n: number }>`SELECT count(*)::int8 AS n FROM orders`.execute(db);
    assert.equal(rows[0]?.n, 16);
    assert.deepEqual(await checkLedger(db), []);
  });
});
