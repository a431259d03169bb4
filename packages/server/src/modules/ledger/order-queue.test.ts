// The order queue (modules/ledger/order-queue.ts), with a database stand-in that says which orders
// each call took: a lone order goes at once; the orders that arrive while a call is in flight go
// together in the next, one per lock group (house slot and partner) in ascending order; an
// order's refusal is its own; a call that fails as a whole fails each of its orders, or, when it
// answers RetryAlone, sends each alone; without lock groups (quotes), a call takes the first
// waiting in their order; and every wait is bounded.

import assert from "node:assert/strict";
import { test } from "node:test";
import { RefusedInBatch } from "../../db/errors.ts";
import { OrderQueue, type OrderQueueOptions, type OrderSender, RetryAlone } from "./order-queue.ts";

interface Call {
  ref: string;
  slot: number;
  partnerId: string;
}
interface Made {
  ref: string;
}

/** A call of order `ref` in house slot `slot` (the stand-in looks at nothing else). */
const call = (ref: string, slot: number, partnerId = "00000000-0000-4000-8000-000000000001"): Call => ({
  ref,
  slot,
  partnerId,
});
const made = (c: Call): Made => ({ ref: c.ref });

interface Pending {
  refs: string[];
  answer: (outcomes?: (Made | RefusedInBatch)[]) => void;
  fail: (err: unknown) => void;
}

/** Records each call; the test answers it when it chooses. */
function standIn() {
  const calls: Pending[] = [];
  const sender: OrderSender<Call, Made> = {
    one: (c) =>
      new Promise((resolve, reject) => {
        calls.push({
          refs: [c.ref],
          answer: (outcomes) => {
            const o = outcomes?.[0] ?? made(c);
            if (o instanceof RefusedInBatch) reject(o);
            else resolve(o);
          },
          fail: reject,
        });
      }),
    many: (cs) =>
      new Promise((resolve, reject) => {
        calls.push({ refs: cs.map((c) => c.ref), answer: (o) => resolve(o ?? cs.map(made)), fail: reject });
      }),
  };
  return { calls, sender };
}

/** A queue on the stand-in; `sizes` records each call's number of orders. */
function queueOf(sender: OrderSender<Call, Made>, opts: OrderQueueOptions, sizes: number[] = []) {
  return new OrderQueue<Call, Made>(sender, (c) => c, { observe: (n) => sizes.push(n) }, opts);
}

const options = { batchMax: 16, waitingMax: 100, callsInFlightMax: 1, waitMs: 60_000 };
const tick = () => new Promise((r) => setImmediate(r));
const refOf = (o: Made) => o.ref;

/** Orders "a" and "b" wait behind a first call, which is then answered: the next call is theirs. */
async function twoBehindFirst(queue: OrderQueue<Call, Made>, calls: Pending[]) {
  const first = queue.make(call("first", 0));
  const a = queue.make(call("a", 1));
  const b = queue.make(call("b", 2));
  calls[0]!.answer();
  await first;
  await tick();
  return { a, b };
}

test("a lone order goes at once, alone", async () => {
  const { calls, sender } = standIn();
  const queue = queueOf(sender, options);
  const order = queue.make(call("a", 3));
  assert.deepEqual(
    calls.map((c) => c.refs),
    [["a"]],
  );
  calls[0]!.answer();
  assert.equal(refOf(await order), "a");
});

test("orders that arrive while a call is in flight go together, one per slot in ascending order", async () => {
  const { calls, sender } = standIn();
  const sizes: number[] = [];
  const queue = queueOf(sender, options, sizes);
  const first = queue.make(call("first", 0));
  const waiting = [call("s5", 5), call("s2", 2), call("s5-again", 5), call("s9", 9), call("s2-again", 2)].map(
    (c) => queue.make(c),
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
  const late = queue.make(call("late", 1));
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
  assert.deepEqual(sizes, [1, 3, 2, 1], "each call's size observed");
});

test("orders of one slot and other partners go together, by slot then partner as PostgreSQL orders uuids", async () => {
  const { calls, sender } = standIn();
  const queue = queueOf(sender, options);
  const first = queue.make(call("first", 0));
  const orders = [
    queue.make(call("s3-b", 3, "B0000000-0000-4000-8000-000000000000")),
    queue.make(call("s3-a", 3, "a0000000-0000-4000-8000-000000000000")),
    queue.make(call("s1-c", 1, "c0000000-0000-4000-8000-000000000000")),
    queue.make(call("s3-b-again", 3, "b0000000-0000-4000-8000-000000000000")),
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
  const queue = queueOf(sender, options);
  const { a, b } = await twoBehindFirst(queue, calls);
  const refused = new RefusedInBatch("23505", "orders_partner_order_ref_key");
  calls[1]!.answer([made(call("a", 1)), refused]);
  assert.equal(refOf(await a), "a");
  await assert.rejects(b, (err) => err === refused);
});

test("a call that fails as a whole fails each of its orders, and the queue goes on", async () => {
  const { calls, sender } = standIn();
  const queue = queueOf(sender, options);
  const { a, b } = await twoBehindFirst(queue, calls);
  const lost = new Error("connection lost");
  calls[1]!.fail(lost);
  await assert.rejects(a, (err) => err === lost);
  await assert.rejects(b, (err) => err === lost);
  const next = queue.make(call("next", 3));
  await tick();
  assert.deepEqual(calls[2]!.refs, ["next"]);
  calls[2]!.answer();
  assert.equal(refOf(await next), "next");
});

test("a call that answers RetryAlone sends each of its orders alone, each answered by its own call", async () => {
  const { calls, sender } = standIn();
  const sizes: number[] = [];
  const queue = queueOf(sender, options, sizes);
  const { a, b } = await twoBehindFirst(queue, calls);
  assert.deepEqual(calls[1]!.refs, ["a", "b"]);
  calls[1]!.fail(new RetryAlone(new Error("one of them raised")));
  await tick();
  assert.deepEqual(
    calls.slice(2).map((c) => c.refs),
    [["a"], ["b"]],
  );
  // The call stays in flight until each alone is answered: an order arriving now waits.
  const later = queue.make(call("later", 3));
  await tick();
  assert.equal(calls.length, 4);
  const replayed = new RefusedInBatch("CP004", undefined);
  calls[2]!.answer();
  calls[3]!.answer([replayed]);
  assert.equal(refOf(await a), "a");
  await assert.rejects(b, (err) => err === replayed);
  await tick();
  assert.deepEqual(calls[4]!.refs, ["later"]);
  calls[4]!.answer();
  assert.equal(refOf(await later), "later");
  assert.deepEqual(sizes, [1, 2, 1, 1, 1]);
});

test("without lock groups, a call takes the first waiting orders in their order, any slot", async () => {
  const { calls, sender } = standIn();
  const queue = new OrderQueue<Call, Made>(
    sender,
    undefined,
    { observe: () => {} },
    { ...options, batchMax: 3 },
  );
  const first = queue.make(call("first", 0));
  const rest = [call("x", 5), call("y", 5), call("z", 1), call("w", 5)].map((c) => queue.make(c));
  calls[0]!.answer();
  await first;
  await tick();
  assert.deepEqual(calls[1]!.refs, ["x", "y", "z"]);
  calls[1]!.answer();
  await tick();
  assert.deepEqual(calls[2]!.refs, ["w"]);
  calls[2]!.answer();
  assert.deepEqual((await Promise.all(rest)).map(refOf), ["x", "y", "z", "w"]);
});

test("a call answering another number of orders fails each of them", async () => {
  const { calls, sender } = standIn();
  const queue = queueOf(sender, options);
  const { a, b } = await twoBehindFirst(queue, calls);
  calls[1]!.answer([made(call("a", 1))]);
  await assert.rejects(a, /another number/);
  await assert.rejects(b, /another number/);
});

test("a call takes at most batchMax orders", async () => {
  const { calls, sender } = standIn();
  const queue = queueOf(sender, { ...options, batchMax: 2 });
  const all = [queue.make(call("first", 0)), ...[1, 2, 3].map((s) => queue.make(call(`s${s}`, s)))];
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
  const queue = queueOf(sender, { ...options, waitingMax: 1 });
  const first = queue.make(call("first", 0));
  const waits = queue.make(call("waits", 1));
  const alone = queue.make(call("alone", 2));
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
  const queue = queueOf(sender, { ...options, waitMs: 30 });
  const first = queue.make(call("first", 0));
  const waits = queue.make(call("waits", 1));
  const taken = queue.make(call("taken", 2));
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
  const again = queue.make(call("again", 0));
  const inTime = queue.make(call("in-time", 3));
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
  const queue = queueOf(sender, { ...options, callsInFlightMax: 2 });
  const orders = [queue.make(call("a", 0)), queue.make(call("b", 0)), queue.make(call("c", 1))];
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
  assert.throws(() => queueOf(sender, { ...options, batchMax: 0 }));
  assert.throws(() => queueOf(sender, { ...options, callsInFlightMax: 0 }));
  assert.throws(() => queueOf(sender, { ...options, waitMs: -1 }));
});
