// The funding queue (modules/funding/funding-queue.ts), with a database stand-in that says which
// orders each call took: a lone order goes at once; the orders that arrive while a call is in
// flight go together in the next, one per house slot in ascending order; an order's refusal is its
// own; a call that fails as a whole fails each of its orders; and every wait is bounded.

import assert from "node:assert/strict";
import { test } from "node:test";
import type { Selectable } from "kysely";
import type { OrdersTable } from "../../db/schema.ts";
import { FundingQueue, type FundingSender, fundingCallsHistogram } from "./funding-queue.ts";
import { type FundingCall, FundingOrderRefused, type FundingOutcome } from "./funding-store.ts";

type Order = Selectable<OrdersTable>;

/** A call of order `ref` in house slot `slot` (the stand-in looks at nothing else). */
const call = (
  ref: string,
  slot: number,
  partnerId = "00000000-0000-4000-8000-000000000001",
): FundingCall => ({
  order: { partnerId, clientId: slot, ref, type: "deposit", assetId: "AED", amount: 1n, legs: [], slot },
});
const made = (c: FundingCall) => ({ partner_order_ref: c.order.ref }) as unknown as Order;

interface Pending {
  refs: string[];
  answer: (outcomes?: FundingOutcome[]) => void;
  fail: (err: unknown) => void;
}

/** Records each call; the test answers it when it chooses. */
function standIn() {
  const calls: Pending[] = [];
  const sender: FundingSender = {
    one: (c) =>
      new Promise((resolve, reject) => {
        calls.push({
          refs: [c.order.ref],
          answer: (outcomes) => {
            const o = outcomes?.[0] ?? made(c);
            if (o instanceof FundingOrderRefused) reject(o);
            else resolve(o);
          },
          fail: reject,
        });
      }),
    many: (cs) =>
      new Promise((resolve, reject) => {
        calls.push({
          refs: cs.map((c) => c.order.ref),
          answer: (o) => resolve(o ?? cs.map(made)),
          fail: reject,
        });
      }),
  };
  return { calls, sender };
}

const options = { batchMax: 16, waitingMax: 100, callsInFlightMax: 1, waitMs: 60_000 };
const tick = () => new Promise((r) => setImmediate(r));
const refOf = (o: Order) => o.partner_order_ref;

test("a lone order goes at once, alone", async () => {
  const { calls, sender } = standIn();
  const queue = new FundingQueue(sender, fundingCallsHistogram(), options);
  const order = queue.fund(call("a", 3));
  assert.deepEqual(
    calls.map((c) => c.refs),
    [["a"]],
  );
  calls[0]!.answer();
  assert.equal(refOf(await order), "a");
});

test("orders that arrive while a call is in flight go together, one per slot in ascending order", async () => {
  const { calls, sender } = standIn();
  const histogram = fundingCallsHistogram();
  const queue = new FundingQueue(sender, histogram, options);
  const first = queue.fund(call("first", 0));
  const waiting = [call("s5", 5), call("s2", 2), call("s5-again", 5), call("s9", 9), call("s2-again", 2)].map(
    (c) => queue.fund(c),
  );
  assert.equal(calls.length, 1, "nothing else goes while the first call is in flight");
  assert.equal(queue.waiting, 5);
  calls[0]!.answer();
  await first;
  await tick();
  assert.deepEqual(calls[1]!.refs, ["s2", "s5", "s9"], "the first of each slot, in ascending slot order");
  assert.equal(queue.waiting, 2);
  calls[1]!.answer();
  await tick();
  assert.deepEqual(calls[2]!.refs, ["s2-again", "s5-again"], "those held back go next, before later ones");
  const late = queue.fund(call("late", 1));
  calls[2]!.answer();
  await tick();
  assert.deepEqual(calls[3]!.refs, ["late"]);
  calls[3]!.answer();
  assert.deepEqual((await Promise.all([...waiting, late])).map(refOf), [
    "s5",
    "s2",
    "s5-again",
    "s9",
    "s2-again",
    "late",
  ]);
  const counted = (await histogram.get()).values.find((v) => v.metricName?.endsWith("_count"));
  assert.equal(counted?.value, 4, "four calls observed");
});

test("orders of one slot and other partners go together, by slot then partner as PostgreSQL orders uuids", async () => {
  const { calls, sender } = standIn();
  const queue = new FundingQueue(sender, fundingCallsHistogram(), options);
  const first = queue.fund(call("first", 0));
  const orders = [
    queue.fund(call("s3-b", 3, "B0000000-0000-4000-8000-000000000000")),
    queue.fund(call("s3-a", 3, "a0000000-0000-4000-8000-000000000000")),
    queue.fund(call("s1-c", 1, "c0000000-0000-4000-8000-000000000000")),
    queue.fund(call("s3-b-again", 3, "b0000000-0000-4000-8000-000000000000")),
  ];
  calls[0]!.answer();
  await first;
  await tick();
  assert.deepEqual(
    calls[1]!.refs,
    ["s1-c", "s3-a", "s3-b"],
    "one per slot and partner (the partner's case aside)",
  );
  calls[1]!.answer();
  await tick();
  assert.deepEqual(calls[2]!.refs, ["s3-b-again"]);
  calls[2]!.answer();
  assert.equal((await Promise.all(orders)).length, 4);
});

test("an order refused in a call is refused alone; the others are made", async () => {
  const { calls, sender } = standIn();
  const queue = new FundingQueue(sender, fundingCallsHistogram(), options);
  const first = queue.fund(call("first", 0));
  const a = queue.fund(call("a", 1));
  const b = queue.fund(call("b", 2));
  calls[0]!.answer();
  await first;
  await tick();
  const refused = new FundingOrderRefused("23505", "orders_partner_order_ref_key");
  calls[1]!.answer([made(call("a", 1)), refused]);
  assert.equal(refOf(await a), "a");
  await assert.rejects(b, (err) => err === refused);
});

test("a call that fails as a whole fails each of its orders, and the queue goes on", async () => {
  const { calls, sender } = standIn();
  const queue = new FundingQueue(sender, fundingCallsHistogram(), options);
  const first = queue.fund(call("first", 0));
  const a = queue.fund(call("a", 1));
  const b = queue.fund(call("b", 2));
  calls[0]!.answer();
  await first;
  await tick();
  const lost = new Error("connection lost");
  calls[1]!.fail(lost);
  await assert.rejects(a, (err) => err === lost);
  await assert.rejects(b, (err) => err === lost);
  const next = queue.fund(call("next", 3));
  await tick();
  assert.deepEqual(calls[2]!.refs, ["next"]);
  calls[2]!.answer();
  assert.equal(refOf(await next), "next");
});

test("a call answering another number of orders fails each of them", async () => {
  const { calls, sender } = standIn();
  const queue = new FundingQueue(sender, fundingCallsHistogram(), options);
  const first = queue.fund(call("first", 0));
  const a = queue.fund(call("a", 1));
  const b = queue.fund(call("b", 2));
  calls[0]!.answer();
  await first;
  await tick();
  calls[1]!.answer([made(call("a", 1))]);
  await assert.rejects(a, /another number/);
  await assert.rejects(b, /another number/);
});

test("a call takes at most batchMax orders", async () => {
  const { calls, sender } = standIn();
  const queue = new FundingQueue(sender, fundingCallsHistogram(), { ...options, batchMax: 2 });
  const all = [queue.fund(call("first", 0)), ...[1, 2, 3].map((s) => queue.fund(call(`s${s}`, s)))];
  calls[0]!.answer();
  await tick();
  assert.deepEqual(calls[1]!.refs, ["s1", "s2"]);
  calls[1]!.answer();
  await tick();
  assert.deepEqual(calls[2]!.refs, ["s3"]);
  calls[2]!.answer();
  assert.equal((await Promise.all(all)).length, 4);
});

test("past waitingMax orders waiting, an order goes alone at once", async () => {
  const { calls, sender } = standIn();
  const queue = new FundingQueue(sender, fundingCallsHistogram(), { ...options, waitingMax: 1 });
  const first = queue.fund(call("first", 0));
  const waits = queue.fund(call("waits", 1));
  const alone = queue.fund(call("alone", 2));
  assert.deepEqual(
    calls.map((c) => c.refs),
    [["first"], ["alone"]],
  );
  calls[1]!.answer();
  assert.equal(refOf(await alone), "alone");
  calls[0]!.answer();
  await first;
  await tick();
  calls[2]!.answer();
  assert.equal(refOf(await waits), "waits");
});

test("an order that waited waitMs for a call (the database slow or hung) goes alone", async () => {
  const { calls, sender } = standIn();
  const queue = new FundingQueue(sender, fundingCallsHistogram(), { ...options, waitMs: 30 });
  const first = queue.fund(call("first", 0));
  const waits = queue.fund(call("waits", 1));
  const taken = queue.fund(call("taken", 2));
  assert.equal(calls.length, 1);
  await new Promise((r) => setTimeout(r, 80));
  assert.deepEqual(
    calls.map((c) => c.refs),
    [["first"], ["waits"], ["taken"]],
    "both went alone while the first call hung",
  );
  assert.equal(queue.waiting, 0);
  calls[1]!.answer();
  calls[2]!.answer();
  assert.deepEqual([refOf(await waits), refOf(await taken)], ["waits", "taken"]);
  calls[0]!.answer();
  await first;
  await tick();
  // Taken by a call in time, an order does not go a second time when its wait would have ended.
  const again = queue.fund(call("again", 0));
  const inTime = queue.fund(call("in-time", 3));
  calls[3]!.answer();
  await again;
  await tick();
  assert.deepEqual(calls[4]!.refs, ["in-time"]);
  await new Promise((r) => setTimeout(r, 80));
  assert.equal(calls.length, 5);
  calls[4]!.answer();
  assert.equal(refOf(await inTime), "in-time");
});

test("callsInFlightMax calls go at once before any waits", async () => {
  const { calls, sender } = standIn();
  const queue = new FundingQueue(sender, fundingCallsHistogram(), { ...options, callsInFlightMax: 2 });
  const orders = [queue.fund(call("a", 0)), queue.fund(call("b", 0)), queue.fund(call("c", 1))];
  assert.deepEqual(
    calls.map((c) => c.refs),
    [["a"], ["b"]],
  );
  assert.equal(queue.waiting, 1);
  calls[1]!.answer();
  await tick();
  assert.deepEqual(calls[2]!.refs, ["c"]);
  calls[0]!.answer();
  calls[2]!.answer();
  assert.deepEqual((await Promise.all(orders)).map(refOf), ["a", "b", "c"]);
});

test("options that would never send an order are refused", () => {
  const { sender } = standIn();
  assert.throws(() => new FundingQueue(sender, fundingCallsHistogram(), { ...options, batchMax: 0 }));
  assert.throws(() => new FundingQueue(sender, fundingCallsHistogram(), { ...options, callsInFlightMax: 0 }));
  assert.throws(() => new FundingQueue(sender, fundingCallsHistogram(), { ...options, waitMs: -1 }));
});
