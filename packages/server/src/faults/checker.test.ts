// The bank test's checker on small hand-made histories: a consistent one passes every invariant,
// and each kind of violation is caught by the invariant that names it.

import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { type CheckReport, checkHistory } from "./checker.ts";
import type { History, Op, Order, Outcome, PartnerFinal } from "./history.ts";

function order(id: number, over: Partial<Order>): Order {
  return {
    id,
    order_no: `ORD-20261123-${String(id).padStart(6, "0")}`,
    partner_order_ref: null,
    partner_client_id: "client-1",
    type: "deposit",
    source: "bank",
    status: "completed",
    price: null,
    credit: null,
    credit_asset_id: null,
    debit: null,
    debit_asset_id: null,
    fee: "0E-8",
    fee_asset_id: "AED",
    vat: "0E-8",
    created_at: `2026-11-23T10:00:0${id}.000000Z`,
    transitioned_at: `2026-11-23T10:00:0${id}.000000Z`,
    updated_at: `2026-11-23T10:00:0${id}.000000Z`,
    ...over,
  };
}

const ok = (result: unknown): Outcome => ({ type: "answer", status: 200, body: { result } });
const err = (status: number, code: number): Outcome => ({
  type: "answer",
  status,
  body: { code, msg: "x", msg_detail: null },
});

const deposit1 = order(1, { partner_order_ref: "r1", debit: "100.00000000", debit_asset_id: "AED" });
const withdrawal2 = order(2, {
  partner_order_ref: "r2",
  type: "withdrawal",
  credit: "30.00000000",
  credit_asset_id: "AED",
});
const buy3 = order(3, {
  partner_order_ref: "r4",
  type: "buy",
  source: "market",
  price: "350000.00000000",
  debit: "0.00010000",
  debit_asset_id: "BTC",
  credit: "35.00000000",
  credit_asset_id: "AED",
  fee: "0.18000000",
});
const deposit4 = order(4, {
  partner_order_ref: "r6",
  partner_client_id: "client-2",
  debit: "50.00000000",
  debit_asset_id: "USD",
});
const depositB5 = order(5, { partner_order_ref: "r1", debit: "10.00000000", debit_asset_id: "AED" });

/** A consistent history: every invariant holds. Operation i is invoked at 100·i ms and ends 50 ms later. */
function baseline(): History {
  let n = 0;
  const op = (o: Omit<Op, "id" | "invokedMs" | "endedMs" | "process">): Op => {
    n++;
    return { id: n, invokedMs: 100 * n, endedMs: 100 * n + 50, process: 0, ...o };
  };
  const ops: Op[] = [
    op({
      partner: "A",
      kind: "deposit",
      label: "deposit",
      ref: "r1",
      client: "client-1",
      asset: "AED",
      amount: "100.00",
      outcome: ok(deposit1),
    }),
    op({
      partner: "A",
      kind: "withdrawal",
      label: "withdrawal",
      ref: "r2",
      client: "client-1",
      asset: "AED",
      amount: "30.00",
      outcome: ok(withdrawal2),
    }),
    op({
      partner: "A",
      kind: "deposit",
      label: "replay same body",
      ref: "r1",
      client: "client-1",
      asset: "AED",
      amount: "100.00",
      outcome: err(409, 2020),
    }),
    op({
      partner: "A",
      kind: "withdrawal",
      label: "withdrawal",
      ref: "r3",
      client: "client-2",
      asset: "AED",
      amount: "5.00",
      outcome: err(400, 3005),
    }),
    op({
      partner: "A",
      kind: "quote",
      label: "quote",
      client: "client-1",
      quote: { side: "buy", pair: "BTC-AED", baseAmount: "0.0001" },
      outcome: ok({ token: "qt_x" }),
    }),
    op({
      partner: "A",
      kind: "execute",
      label: "race execute",
      ref: "r4",
      client: "client-1",
      quoteOp: 5,
      outcome: ok(buy3),
    }),
    op({
      partner: "A",
      kind: "execute",
      label: "race execute",
      ref: "r5",
      client: "client-1",
      quoteOp: 5,
      outcome: err(400, 4008),
    }),
    op({
      partner: "A",
      kind: "deposit",
      label: "deposit",
      ref: "r6",
      client: "client-2",
      asset: "USD",
      amount: "50.00",
      outcome: { type: "indeterminate", reason: "timeout" },
    }),
    op({
      partner: "A",
      kind: "read_balances",
      label: "read balances",
      client: "client-1",
      outcome: {
        type: "answer",
        status: 200,
        body: { items: [{ asset_id: "AED", balance: "70.00000000", available_balance: "70.00000000" }] },
      },
    }),
    op({
      partner: "B",
      kind: "probe",
      label: "B probe",
      target: { id: 1 },
      expect: ["404"],
      outcome: err(404, 404),
    }),
    op({
      partner: "B",
      kind: "deposit",
      label: "B deposit",
      ref: "r1",
      client: "client-1",
      asset: "AED",
      amount: "10.00",
      outcome: ok(depositB5),
    }),
    op({
      partner: "A",
      kind: "invalid",
      label: "invalid: negative",
      ref: "x1",
      client: "client-1",
      expect: ["422"],
      outcome: { type: "answer", status: 422, body: { code: 422 } },
    }),
    op({
      partner: "A",
      kind: "read_order",
      label: "read order by id",
      target: { id: 1 },
      outcome: ok(deposit1),
    }),
  ];
  const bal = (balance: string) => ({ balance, available: balance });
  const finalA: PartnerFinal = {
    expectedClients: ["client-1", "client-2"],
    listedClients: ["client-1", "client-2"],
    balances: {
      "client-1": { AED: bal("34.82000000"), BTC: bal("0.00010000"), USD: bal("0E-8") },
      "client-2": { AED: bal("0E-8"), BTC: bal("0E-8"), USD: bal("50.00000000") },
    },
    orders: [deposit4, buy3, withdrawal2, deposit1],
    orderTotals: {
      all: 4,
      byClient: { "client-1": 3, "client-2": 1 },
      byFilter: {
        "status=completed": 4,
        "status=rejected": 0,
        "status=failed": 0,
        "source=bank": 3,
        "source=market": 1,
        "source=bank&status=completed&status=rejected": 3,
      },
    },
    refLookups: { r6: deposit4 },
  };
  const finalB: PartnerFinal = {
    expectedClients: ["client-1"],
    listedClients: ["client-1"],
    balances: { "client-1": { AED: bal("10.00000000"), USD: bal("0E-8") } },
    orders: [depositB5],
    orderTotals: {
      all: 1,
      byClient: { "client-1": 1 },
      byFilter: {
        "status=completed": 1,
        "status=rejected": 0,
        "status=failed": 0,
        "source=bank": 1,
        "source=market": 0,
        "source=bank&status=completed&status=rejected": 1,
      },
    },
    refLookups: {},
  };
  return {
    ops,
    final: { A: finalA, B: finalB },
    facts: {
      seed: 1,
      workers: 1,
      required: { operations: 1, workers: 1, faults: { kill: 0, pg_restart: 0, terminate: 1 } },
      faults: [{ kind: "terminate", injectedMs: 850, healedMs: 860 }],
      unexpectedExits: [],
      harnessErrors: [],
      ledgerCheckOk: true,
      recovery: { afterMs: 100, rate: 0.99 },
    },
  };
}

function failing(report: CheckReport): string[] {
  return report.invariants.filter((i) => i.violations.length > 0).map((i) => i.name);
}

/** Runs the checker and asserts that the invariant whose name starts with `name` failed. */
function assertCaught(h: History, name: string): void {
  const report = checkHistory(h);
  const failed = failing(report);
  assert.ok(
    failed.some((f) => f.startsWith(name)),
    `expected "${name}" to fail; failed: ${JSON.stringify(failed)}`,
  );
}

function opById(h: History, id: number): Op {
  return h.ops.find((o) => o.id === id)!;
}

describe("bank test checker", () => {
  test("a consistent history passes every invariant, each with something checked", () => {
    const report = checkHistory(baseline());
    assert.deepEqual(failing(report), []);
    for (const i of report.invariants) assert.ok(i.checked > 0, `${i.name} checked nothing`);
    assert.equal(report.recovery.length, 1);
    assert.deepEqual(report.resolution, { committed: 1, notCommitted: 0, committedAfterOnly5xx: 0 });
    assert.deepEqual(report.recovery[0]!.judged, { total: 4, answered: 4 });
  });

  test("an API process that exits on its own", () => {
    const h = baseline();
    h.facts.unexpectedExits.push({ process: 1, atMs: 900, code: 1, signal: null, tail: "unhandled 'error'" });
    assertCaught(h, "processes never exit");
  });

  test("a run short of its operations or faults", () => {
    const h = baseline();
    h.facts.required.operations = 1_000;
    assertCaught(h, "the run did what it claims");
    const h2 = baseline();
    h2.facts.required.faults.kill = 1;
    assertCaught(h2, "the run did what it claims");
    const h3 = baseline();
    h3.facts.harnessErrors.push("worker 3: TypeError");
    assertCaught(h3, "the run did what it claims");
  });

  test("money out of thin air: a balance above what the completed orders make", () => {
    const h = baseline();
    h.final.A.balances["client-2"]!.USD = { balance: "60.00000000", available: "60.00000000" };
    assertCaught(h, "conservation per asset");
  });

  test("money moved between clients: sums per asset agree, one client's balance does not match its orders", () => {
    const h = baseline();
    h.final.A.balances["client-1"]!.USD = { balance: "50.00000000", available: "50.00000000" };
    h.final.A.balances["client-2"]!.USD = { balance: "0E-8", available: "0E-8" };
    const failed = failing(checkHistory(h));
    assert.ok(failed.includes("each client's balance equals the sum of its orders"), JSON.stringify(failed));
    assert.ok(!failed.some((f) => f.startsWith("conservation")), JSON.stringify(failed));
  });

  test("a negative balance read during the run", () => {
    const h = baseline();
    opById(h, 9).outcome = {
      type: "answer",
      status: 200,
      body: { items: [{ asset_id: "AED", balance: "-1.00", available_balance: "-1.00" }] },
    };
    assertCaught(h, "no negative balance ever read");
  });

  test("two orders with one reference", () => {
    const h = baseline();
    const second = order(6, { partner_order_ref: "r1", debit: "100.00000000", debit_asset_id: "AED" });
    opById(h, 3).outcome = ok(second);
    h.final.A.orders.push(second);
    assertCaught(h, "exactly one order per partner_order_ref");
  });

  test("a reuse of a taken reference answered with something else than 2020", () => {
    const h = baseline();
    opById(h, 3).outcome = err(400, 3005);
    assertCaught(h, "2020 on every reuse");
  });

  test("a 2020 for a reference no order has", () => {
    const h = baseline();
    opById(h, 4).outcome = err(409, 2020);
    assertCaught(h, "2020 on every reuse");
  });

  test("a failed request that left an order behind", () => {
    const h = baseline();
    h.final.A.orders.push(
      order(7, {
        partner_order_ref: "r3",
        partner_client_id: "client-2",
        type: "withdrawal",
        status: "rejected",
        credit: "5.00000000",
        credit_asset_id: "AED",
      }),
    );
    assertCaught(h, "a failed request creates no order");
  });

  test("two executions of one token both answered", () => {
    const h = baseline();
    const other = { ...buy3, id: 8, partner_order_ref: "r5" };
    opById(h, 7).outcome = ok(other);
    assertCaught(h, "one order per quote token");
  });

  test("two orders for one quote in the final state", () => {
    const h = baseline();
    opById(h, 7).outcome = { type: "indeterminate", reason: "reset" };
    const other = { ...buy3, id: 8, partner_order_ref: "r5", status: "rejected" };
    h.final.A.orders.push(other);
    h.final.A.refLookups.r5 = other;
    assertCaught(h, "one order per quote token");
  });

  test("an acknowledged order missing at the end", () => {
    const h = baseline();
    h.final.A.orders = h.final.A.orders.filter((o) => o.id !== 2);
    assertCaught(h, "every acknowledged order durable and unchanged");
  });

  test("an acknowledged order changed, field by field", () => {
    const h = baseline();
    h.final.A.orders = h.final.A.orders.map((o) => (o.id === 3 ? { ...o, fee: "0.19000000" } : o));
    const report = checkHistory(h);
    const durable = report.invariants.find((i) => i.name.startsWith("every acknowledged order durable"))!;
    assert.match(durable.violations.join("\n"), /order 3 changed: fee: "0.18000000" → "0.19000000"/);
  });

  test("a read during the run that disagrees with the acknowledged order", () => {
    const h = baseline();
    opById(h, 13).outcome = ok({ ...deposit1, debit: "99.00000000" });
    assertCaught(h, "every acknowledged order durable and unchanged");
  });

  test("an order that no request explains", () => {
    const h = baseline();
    h.final.A.orders.push(
      order(9, {
        partner_order_ref: "zz",
        partner_client_id: "client-2",
        status: "rejected",
        debit: "1.00000000",
        debit_asset_id: "AED",
      }),
    );
    assertCaught(h, "every order comes from a request");
  });

  test("partner B sees A's order", () => {
    const h = baseline();
    opById(h, 10).outcome = ok(deposit1);
    assertCaught(h, "isolation between partners");
  });

  test("A's operation changes B's balance of the client with the same id", () => {
    const h = baseline();
    h.final.B.balances["client-1"]!.AED = { balance: "110.00000000", available: "110.00000000" };
    h.final.B.orders.push({ ...deposit1, id: 10 });
    h.final.B.refLookups = {};
    assertCaught(h, "isolation between partners");
  });

  test("an orders list's total that is not the orders it lists, for the partner or a client", () => {
    const h = baseline();
    h.final.A.orderTotals.all = 5;
    assertCaught(h, "an orders list's total");
    const h2 = baseline();
    h2.final.A.orderTotals.byClient["client-2"] = 0;
    assertCaught(h2, "an orders list's total");
    const h3 = baseline();
    delete h3.final.B.orderTotals.byClient["client-1"];
    assertCaught(h3, "an orders list's total");
    // Filtered: a total by status or source that is not the orders listed with it.
    const h4 = baseline();
    h4.final.A.orderTotals.byFilter["status=rejected"] = 1;
    assertCaught(h4, "an orders list's total");
    const h5 = baseline();
    h5.final.B.orderTotals.byFilter["source=bank&status=completed&status=rejected"] = 0;
    assertCaught(h5, "an orders list's total");
    // A trade turned rejected while its total stayed with the completed ones.
    const h6 = baseline();
    h6.final.A.orders = h6.final.A.orders.map((o) => (o.id === 3 ? { ...o, status: "rejected" } : o));
    assertCaught(h6, "an orders list's total");
  });

  test("B's listing shows A's clients", () => {
    const h = baseline();
    h.final.B.listedClients.push("client-2");
    assertCaught(h, "isolation between partners");
  });

  test("an indeterminate operation never looked up, or a lookup that disagrees with the list", () => {
    const h = baseline();
    h.final.A.refLookups = {};
    assertCaught(h, "every indeterminate operation resolved");
    const h2 = baseline();
    h2.final.A.refLookups.r6 = null;
    assertCaught(h2, "every indeterminate operation resolved");
  });

  test("an answer the contract does not allow", () => {
    const h = baseline();
    opById(h, 1).outcome = ok({ ...deposit1, debit: "10.00000000" });
    assertCaught(h, "every answer is one the contract allows");
    const h2 = baseline();
    opById(h2, 12).outcome = err(400, 2008);
    assertCaught(h2, "every answer is one the contract allows");
  });

  test("too few answers 10 s after a fault healed", () => {
    const h = baseline();
    opById(h, 11).outcome = { type: "indeterminate", reason: "5xx", status: 503 };
    h.final.B.refLookups.r1 = depositB5;
    assertCaught(h, "≥ 99 % answered");
  });

  test("an operation cut by the next fault is that fault's, not the previous one's", () => {
    const h = baseline();
    opById(h, 12).outcome = { type: "indeterminate", reason: "reset" };
    h.final.A.refLookups.x1 = null;
    h.facts.faults.push({ kind: "kill", process: 1, injectedMs: 1240, healedMs: 1245 });
    const report = checkHistory(h);
    assert.deepEqual(report.recovery[0]!.judged, { total: 2, answered: 2 });
    assert.deepEqual(report.recovery[0]!.failures, {});
    assert.deepEqual(report.recovery[1]!.early, { total: 1, answered: 1 });
  });

  test("the ledger check found differences", () => {
    const h = baseline();
    h.facts.ledgerCheckOk = false;
    assertCaught(h, "ledger check");
  });
});
