// Concurrency on PostgreSQL (docs/decisions.md, "Money"; docs/architecture.md, "Money"): concurrent
// withdrawals never overdraw, one partner_order_ref makes one order whatever races it, and a
// mixed race of deposits and withdrawals ends exactly where the accepted ones say. No request may
// end in a 500 or a 503.
//
// On PostgreSQL (`npm run test:pg`) the requests alternate between two `counterpart serve`
// processes sharing one fresh database. On PGlite (`npm test`) they run in-process through one
// test context; PGlite serialises them, and the same assertions must hold.

import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { formatDecimal } from "@counterpart/protocol";
import { insertClient } from "../../testing/fixtures.ts";
import { onPostgres } from "../../testing/harness.ts";
import {
  type ApiResponse,
  type SignedApi,
  type SignedCall,
  scaled,
  startInProcessApi,
  startTwoProcessApi,
  tally,
} from "../../testing/signed-api.ts";
import { checkLedger } from "../ledger/index.ts";

interface OrderBody {
  id: number;
  type: string;
  status: string;
  partner_order_ref: string;
  partner_client_id: string;
  debit: string | null;
  debit_asset_id: string | null;
  credit: string | null;
  credit_asset_id: string | null;
}

interface BalanceBody {
  asset_id: string;
  balance: string;
  available_balance: string;
}

const timeout = 60_000;
const insufficientFunds = { code: 3005, msg: "Insufficient funds for payment", msg_detail: null };
const duplicateRef = {
  code: 2020,
  msg: "An order with this partner_order_ref already exists",
  msg_detail: null,
};

const orderOf = (r: ApiResponse) => (r.body as { result: OrderBody }).result;

describe(`funding under concurrency (${onPostgres ? "two API processes on PostgreSQL" : "in-process"})`, () => {
  let api: SignedApi;
  before(async () => {
    api = onPostgres ? await startTwoProcessApi() : await startInProcessApi();
  });
  after(async () => {
    if (api !== undefined) await api.close();
  });

  /** The tail of the API processes' output, for a failure message. */
  const logs = () => api.logs().slice(-4_000);

  type Extra = Pick<SignedCall, "via" | "timestampMs">;
  const fund = (
    kind: "deposits" | "withdrawals",
    client: string,
    amount: string,
    ref: string,
    extra: Extra,
  ) =>
    api.call({
      method: "POST",
      url: `/v1/partner/${kind}`,
      body: { partner_client_id: client, asset_id: "AED", amount, partner_order_ref: ref },
      ...extra,
    });
  const deposit = (client: string, amount: string, ref: string, extra: Extra = {}) =>
    fund("deposits", client, amount, ref, extra);
  const withdraw = (client: string, amount: string, ref: string, extra: Extra = {}) =>
    fund("withdrawals", client, amount, ref, extra);

  /** The client's AED entry of GET /v1/partner/balances. */
  async function aedBalance(client: string, via = 0): Promise<{ balance: string; available: string }> {
    const res = await api.call({
      method: "GET",
      url: `/v1/partner/balances?partner_client_id=${client}`,
      via,
    });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    const aed = (res.body as { items: BalanceBody[] }).items.find((b) => b.asset_id === "AED");
    assert.ok(aed, "an AED entry");
    return { balance: aed.balance, available: aed.available_balance };
  }

  async function ordersOfClient(clientId: number) {
    return api.db
      .selectFrom("orders")
      .select(["id", "type", "status", "partner_order_ref"])
      .where("client_id", "=", clientId)
      .execute();
  }

  test("200 concurrent withdrawals of 1 against a balance of 100: exactly 100 complete, 100 are 3005, the balance ends at 0E-8", {
    timeout,
  }, async () => {
    const client = await insertClient(api.db, api.partnerId, 1);
    const funded = await deposit("client-1", "100", "withdrawal-race-funding");
    assert.equal(funded.status, 200, JSON.stringify(funded.body));

    const refs = Array.from({ length: 200 }, (_, i) => `withdrawal-race-${i}`);
    const responses = await Promise.all(refs.map((ref, i) => withdraw("client-1", "1", ref, { via: i })));
    assert.deepEqual(tally(responses), { "200": 100, "400/3005": 100 }, logs());

    for (const [i, r] of responses.entries()) {
      if (r.status !== 200) {
        assert.deepEqual(r.body, insufficientFunds);
        continue;
      }
      const order = orderOf(r);
      assert.equal(order.type, "withdrawal");
      assert.equal(order.status, "completed");
      assert.equal(order.partner_order_ref, refs[i]);
      assert.equal(order.partner_client_id, "client-1");
      assert.equal(order.credit, "1.00000000");
      assert.equal(order.credit_asset_id, "AED");
      assert.equal(order.debit, null);
    }

    // A refused withdrawal left no order behind; each accepted one left exactly its own.
    const accepted = refs.filter((_, i) => responses[i]!.status === 200).sort();
    const rows = await ordersOfClient(client.id);
    assert.equal(rows.length, 101);
    assert.deepEqual(
      rows
        .filter((o) => o.type === "withdrawal")
        .map((o) => o.partner_order_ref)
        .sort(),
      accepted,
    );
    assert.ok(rows.every((o) => o.status === "completed"));
    const list = await api.call({ method: "GET", url: "/v1/partner/orders?partner_client_id=client-1" });
    assert.equal(list.status, 200);
    assert.equal((list.body as { total: number }).total, 101);

    assert.deepEqual(await aedBalance("client-1"), { balance: "0E-8", available: "0E-8" });
    assert.deepEqual(await checkLedger(api.db), []);
  });

  test("20 concurrent deposits with one partner_order_ref: exactly one order, 19 × 2020, the balance rises once", {
    timeout,
  }, async () => {
    const client = await insertClient(api.db, api.partnerId, 2);
    const ref = "deposit-race-one-ref";
    // The same body each time, signed a millisecond apart so that no two signatures are equal
    // (an equal one would be a replay, a 401, not the race under test).
    const signedAt = api.nowMs() - 20;
    const responses = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        deposit("client-2", "25.5", ref, { via: i, timestampMs: signedAt + i }),
      ),
    );
    assert.deepEqual(tally(responses), { "200": 1, "409/2020": 19 }, logs());
    for (const r of responses) if (r.status !== 200) assert.deepEqual(r.body, duplicateRef);

    const winner = orderOf(responses.find((r) => r.status === 200)!);
    assert.equal(winner.type, "deposit");
    assert.equal(winner.status, "completed");
    assert.equal(winner.partner_order_ref, ref);
    assert.equal(winner.debit, "25.50000000");

    const withRef = await api.db
      .selectFrom("orders")
      .select("id")
      .where("partner_id", "=", api.partnerId)
      .where("partner_order_ref", "=", ref)
      .execute();
    assert.deepEqual(
      withRef.map((o) => o.id),
      [winner.id],
    );
    assert.equal((await ordersOfClient(client.id)).length, 1);
    const postings = await api.db
      .selectFrom("postings")
      .select("amount")
      .where("order_id", "=", winner.id)
      .execute();
    assert.equal(postings.length, 2);
    assert.deepEqual(await aedBalance("client-2"), { balance: "25.50000000", available: "25.50000000" });

    // The reference stays taken: a later retry, on either process, is 2020 and changes nothing.
    for (let via = 0; via < api.processes; via++) {
      const again = await deposit("client-2", "25.5", ref, { via });
      assert.equal(again.status, 409);
      assert.deepEqual(again.body, duplicateRef);
    }
    assert.deepEqual(await aedBalance("client-2"), { balance: "25.50000000", available: "25.50000000" });
    assert.deepEqual(await checkLedger(api.db), []);
  });

  test("a race of deposits, withdrawals and reads on one client: never negative, and the final balance is exactly the accepted ones", {
    timeout,
  }, async () => {
    const client = await insertClient(api.db, api.partnerId, 3);
    const opening = await deposit("client-3", "10", "mixed-race-opening");
    assert.equal(opening.status, 200, JSON.stringify(opening.body));

    const cents = (i: number, mul: number) => String((i * mul) % 100).padStart(2, "0");
    // Withdrawals ask for far more than opening + deposits ever hold, so some must be refused;
    // the first one to run finds at least the opening 10 and at most 5.99 is asked: some succeed.
    type Op =
      | { kind: "deposit" | "withdrawal"; amount: string; ref: string }
      | { kind: "read"; amount?: undefined; ref?: undefined };
    const ops: Op[] = Array.from({ length: 180 }, (_, i): Op => {
      if (i % 6 === 5) return { kind: "read" };
      if (i % 6 < 2)
        return { kind: "deposit", amount: `${1 + (i % 3)}.${cents(i, 37)}`, ref: `mixed-race-${i}` };
      return { kind: "withdrawal", amount: `${1 + (i % 5)}.${cents(i, 53)}`, ref: `mixed-race-${i}` };
    });
    const responses = await Promise.all(
      ops.map((op, i) => {
        if (op.kind === "read")
          return api.call({
            method: "GET",
            url: "/v1/partner/balances/AED?partner_client_id=client-3",
            via: i,
          });
        return op.kind === "deposit"
          ? deposit("client-3", op.amount, op.ref, { via: i })
          : withdraw("client-3", op.amount, op.ref, { via: i });
      }),
    );

    let expected = scaled(orderOf(opening).debit);
    const seen = { deposit: 0, withdrawal: 0, refused: 0, reads: 0 };
    for (const [i, op] of ops.entries()) {
      const r = responses[i]!;
      if (op.kind === "read") {
        assert.equal(r.status, 200, `${JSON.stringify(r.body)}\n${logs()}`);
        const b = (r.body as { result: BalanceBody }).result;
        assert.ok(scaled(b.balance) >= 0n, `a read saw a negative balance: ${b.balance}`);
        assert.equal(b.available_balance, b.balance);
        seen.reads++;
        continue;
      }
      if (op.kind === "withdrawal" && r.status === 400) {
        assert.deepEqual(r.body, insufficientFunds);
        seen.refused++;
        continue;
      }
      assert.equal(r.status, 200, `${op.kind} ${op.amount}: ${JSON.stringify(r.body)}\n${logs()}`);
      const order = orderOf(r);
      assert.equal(order.partner_order_ref, op.ref);
      if (op.kind === "deposit") {
        assert.equal(scaled(order.debit), scaled(op.amount));
        expected += scaled(order.debit);
      } else {
        assert.equal(scaled(order.credit), scaled(op.amount));
        expected -= scaled(order.credit);
      }
      seen[op.kind]++;
    }
    assert.equal(seen.deposit, 60, "every deposit is accepted");
    assert.ok(seen.withdrawal > 0, "some withdrawals are accepted");
    assert.ok(seen.refused > 0, "some withdrawals are refused");
    assert.ok(expected >= 0n);

    assert.deepEqual(await aedBalance("client-3"), {
      balance: formatDecimal(expected),
      available: formatDecimal(expected),
    });
    assert.equal((await ordersOfClient(client.id)).length, 1 + seen.deposit + seen.withdrawal);
    const account = await api.db
      .selectFrom("accounts")
      .select(["balance", "held"])
      .where("kind", "=", "client")
      .where("client_id", "=", client.id)
      .where("asset_id", "=", "AED")
      .executeTakeFirstOrThrow();
    assert.equal(scaled(account.balance), expected);
    assert.equal(scaled(account.held), 0n);
    assert.deepEqual(await checkLedger(api.db), []);
  });
});
