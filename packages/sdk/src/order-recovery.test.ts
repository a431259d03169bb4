// The 2020 recovery (docs/reference.md §7.4) on deposits, withdrawals and executions: fetch the order the reference
// names; completed → it is returned as replayed; failed or rejected → a specific error to use a
// new reference; another status → returned for the caller to inspect; someone else's order → the
// conflict stands.

import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { errorCatalog } from "@counterpart/protocol";
import { ConflictError, NetworkError, OrderRefFailedError } from "./index.ts";
import { errorReply, fakeClient, networkError, ok, order, type Recorded } from "./test-fakes.ts";

const duplicate = () => errorReply(409, 2020, errorCatalog.duplicate_order_ref.msg);
const deposit = {
  partner_client_id: "client-1",
  asset_id: "AED",
  amount: "100.5",
  partner_order_ref: "dep-1",
};

/** 2020 on the POST; the order lookup answers `existing`. */
function conflictThen(existing: ReturnType<typeof order> | null) {
  return (r: Recorded) => {
    if (r.method === "POST") return duplicate();
    assert.equal(r.target, "/v1/partner/orders/ref/dep-1");
    return existing === null ? errorReply(404, 404, "Not Found") : ok({ result: existing });
  };
}

describe("2020 recovery", () => {
  test("deposit: the completed order is returned, marked replayed", async () => {
    const fake = fakeClient(conflictThen(order()));
    const result = await fake.client.deposits.create(deposit);
    assert.equal(result.replayed, true);
    assert.equal(result.order.id, 42);
    assert.equal(result.order.status, "completed");
    assert.deepEqual(
      fake.requests.map((r) => `${r.method} ${r.target}`),
      ["POST /v1/partner/deposits", "GET /v1/partner/orders/ref/dep-1"],
    );
  });

  test("the realistic case: the response was lost, the retry meets 2020, the original is returned", async () => {
    const fake = fakeClient((r, n) =>
      n === 0 ? networkError("ECONNRESET") : r.method === "POST" ? duplicate() : ok({ result: order() }),
    );
    const result = await fake.client.deposits.create(deposit);
    assert.deepEqual(result, { order: order(), replayed: true });
    assert.equal(fake.requests.length, 3);
  });

  test("a fresh success is not replayed", async () => {
    const fake = fakeClient(() => ok({ result: order() }));
    assert.deepEqual(await fake.client.deposits.create(deposit), { order: order(), replayed: false });
  });

  for (const status of ["failed", "rejected"] as const) {
    test(`deposit whose order is ${status}: OrderRefFailedError telling to use a new reference`, async () => {
      const fake = fakeClient(conflictThen(order({ status })));
      await assert.rejects(fake.client.deposits.create(deposit), (err: unknown) => {
        assert.ok(err instanceof OrderRefFailedError);
        assert.ok(err instanceof ConflictError);
        assert.equal(err.order.status, status);
        assert.equal(err.partnerOrderRef, "dep-1");
        assert.equal(err.code, 2020);
        assert.equal(err.status, 409);
        assert.match(err.message, new RegExp(`in status ${status}.*with a new partner_order_ref$`));
        return true;
      });
    });
  }

  test("another status is returned for the caller to inspect", async () => {
    const fake = fakeClient(conflictThen(order({ status: "pending" })));
    const result = await fake.client.deposits.create(deposit);
    assert.equal(result.replayed, true);
    assert.equal(result.order.status, "pending");
  });

  test("withdrawal: compared on its credit leg", async () => {
    const withdrawal = order({
      type: "withdrawal",
      debit: null,
      debit_asset_id: null,
      credit: "1.0E-7",
      credit_asset_id: "AED",
    });
    const fake = fakeClient(conflictThen(withdrawal));
    const result = await fake.client.withdrawals.create({ ...deposit, amount: "0.0000001" });
    assert.equal(result.replayed, true);
    assert.equal(result.order.credit, "1.0E-7");
  });

  test("the reference names a different order: the conflict stands, with that order attached", async () => {
    for (const [label, existing] of [
      ["another type", order({ type: "withdrawal", credit: "100.5", credit_asset_id: "AED", debit: null })],
      ["another client", order({ partner_client_id: "client-2" })],
      ["another amount", order({ debit: "99.00000000" })],
      ["another asset", order({ debit_asset_id: "USD" })],
    ] as const) {
      const fake = fakeClient(conflictThen(existing));
      await assert.rejects(fake.client.deposits.create(deposit), (err: unknown) => {
        assert.ok(err instanceof ConflictError, label);
        assert.ok(!(err instanceof OrderRefFailedError), label);
        assert.deepEqual(err.existingOrder, existing);
        assert.match(err.message, /is not this request's .*use a new partner_order_ref/);
        return true;
      });
    }
  });

  test("an order the lookup cannot see leaves the original 2020", async () => {
    const fake = fakeClient(conflictThen(null));
    await assert.rejects(fake.client.deposits.create(deposit), (err: unknown) => {
      assert.ok(err instanceof ConflictError);
      assert.equal(err.existingOrder, null);
      assert.match(err.message, /orders\.getByRef/);
      return true;
    });
  });

  test("a lookup that fails on the network reports that failure", async () => {
    const fake = fakeClient((r) => (r.method === "POST" ? duplicate() : networkError("ECONNREFUSED")), {
      maxRetries: 0,
    });
    await assert.rejects(fake.client.deposits.create(deposit), NetworkError);
  });

  test("execution with a reference: completed trade returned; rejected → OrderRefFailedError asking for a new quote", async () => {
    const trade = order({
      type: "buy",
      source: "market",
      partner_order_ref: "dep-1",
      price: "250000.00000000",
    });
    const fake = fakeClient(conflictThen(trade));
    const result = await fake.client.quotes.execute({
      partner_client_id: "client-1",
      token: "qt_x",
      partner_order_ref: "dep-1",
    });
    assert.deepEqual(result, { order: trade, replayed: true });

    const rejected = fakeClient(conflictThen({ ...trade, status: "rejected" }));
    await assert.rejects(
      rejected.client.quotes.execute({
        partner_client_id: "client-1",
        token: "qt_x",
        partner_order_ref: "dep-1",
      }),
      (err: unknown) =>
        err instanceof OrderRefFailedError && /new partner_order_ref and a new quote$/.test(err.message),
    );

    const deposited = fakeClient(conflictThen(order()));
    await assert.rejects(
      deposited.client.quotes.execute({
        partner_client_id: "client-1",
        token: "qt_x",
        partner_order_ref: "dep-1",
      }),
      (err: unknown) => err instanceof ConflictError && /it is a deposit/.test(err.message),
    );
  });

  test("execution without a reference: nothing to recover, the 2020 is thrown as is", async () => {
    const fake = fakeClient(() => duplicate());
    await assert.rejects(
      fake.client.quotes.execute({ partner_client_id: "client-1", token: "qt_x" }),
      ConflictError,
    );
    assert.equal(fake.requests.length, 1);
  });
});
