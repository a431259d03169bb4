// Orders committed together (docs/decisions.md, "Orders committed together"). While one of a
// process's calls of one use (deposits and withdrawals; executes) is in the database, the orders of
// that use that arrive wait here, and go together in the next call (fund_orders(), migration 0024;
// execute_quotes(), 0025): one transaction and one flush of its WAL for all of them, each order in
// a block of its own, so that each is answered exactly as its own statement would have been. An
// order that finds nothing in flight goes at once, alone: a lone order waits for nothing.
//
// A call takes at most one order per lock group (house slot and partner), in ascending order of
// the two: every order locks its client's rows, then its partner's house accounts of its slot, so
// batches take their locks in one global order and never wait on each other in a cycle. An order
// whose group is taken waits for the next call, ahead of those that came after it. Every wait is
// bounded: an order that has waited `waitMs` for a call (the database slow or gone), or that finds
// `waitingMax` orders waiting, goes alone on a connection of its own, as it would without the queue
// (the pool bounds that wait, and the statement's own bound its answer).
//
// Quotes go together the same way (docs/decisions.md, "Quotes committed together"), with no lock
// groups: a quote takes no lock. Their call is one plain statement, and when one quote's part raises,
// the statement writes nothing and the call answers RetryAlone: each of its quotes then goes alone.

import { Histogram } from "prom-client";
import { limits } from "../../config/limits.ts";
import { RefusedInBatch } from "../../db/errors.ts";

/** How a queue reaches the database: one order's statement, or several orders' in one. */
export interface OrderSender<C, R> {
  one(call: C): Promise<R>;
  /**
   * Each call's result or its own refusal, in the calls' order; throws when the call fails whole,
   * RetryAlone when each of its orders is to go alone instead (nothing of the call was written).
   */
  many(calls: readonly C[]): Promise<(R | RefusedInBatch)[]>;
}

/**
 * A call of several orders wrote nothing because one of them raised: each goes alone, and is
 * answered as its own statement answers (OrderSender.many()).
 */
export class RetryAlone extends Error {
  constructor(cause: unknown) {
    super("one order of the call raised: each goes alone", { cause });
    this.name = "RetryAlone";
  }
}

/** The rows an order locks besides its client's: its partner's house accounts of its slot. */
export interface LockGroup {
  readonly slot: number;
  readonly partnerId: string;
}

export interface OrderQueueOptions {
  /** Orders in one call (one per lock group). */
  batchMax: number;
  /** Orders waiting for a call; past it, an order goes alone. */
  waitingMax: number;
  /** Calls of the queue in the database at once. */
  callsInFlightMax: number;
  /** How long an order waits for a call before it goes alone. */
  waitMs: number;
}

export const defaultOrderQueueOptions: OrderQueueOptions = {
  batchMax: limits.ordersBatchMax,
  waitingMax: limits.ordersWaitingMax,
  callsInFlightMax: limits.ordersCallsInFlightMax,
  waitMs: limits.ordersWaitMs,
};

/** What a queue commits: deposits and withdrawals, executes, or quotes. */
export type OrderUse = "funding" | "execute" | "quote";

export type OrdersPerCall = Histogram<"use">;

/** Orders per call, for an operator to see whether orders are committed together. */
export function ordersPerCallHistogram(): OrdersPerCall {
  const histogram = new Histogram({
    name: "counterpart_orders_per_call",
    help: "Orders per statement of the database, by use (funding: deposits and withdrawals; execute; quote: quotes stored): 1 alone, more committed together",
    labelNames: ["use"],
    buckets: [1, 2, 4, 8, 16],
    registers: [],
  });
  for (const use of ["funding", "execute", "quote"] as const) histogram.zero({ use });
  return histogram;
}

/** What a queue reports its calls' sizes to (a histogram's child). */
export interface CallSizes {
  observe(orders: number): void;
}

interface Waiting<C, R> {
  call: C;
  resolve: (result: R) => void;
  reject: (err: unknown) => void;
  timer: NodeJS.Timeout | undefined;
}

export class OrderQueue<C, R> {
  readonly #send: OrderSender<C, R>;
  readonly #group: ((call: C) => LockGroup) | undefined;
  readonly #calls: CallSizes;
  readonly #options: OrderQueueOptions;
  #inFlight = 0;
  #waiting: Waiting<C, R>[] = [];

  /** Without `group`, orders lock nothing a call's others do: a call takes the first waiting. */
  constructor(
    send: OrderSender<C, R>,
    group: ((call: C) => LockGroup) | undefined,
    calls: CallSizes,
    options: OrderQueueOptions = defaultOrderQueueOptions,
  ) {
    if (
      !(
        options.batchMax >= 1 &&
        options.waitingMax >= 0 &&
        options.callsInFlightMax >= 1 &&
        options.waitMs >= 0
      )
    )
      throw new Error("an order queue needs a batch of one, and one call in flight, at least");
    this.#send = send;
    this.#group = group;
    this.#calls = calls;
    this.#options = options;
  }

  /** Orders waiting for a call now. */
  get waiting(): number {
    return this.#waiting.length;
  }

  /**
   * Makes the order, alone or with others: resolves with what its statement answers, or rejects
   * with what its own statement would have thrown (a RefusedInBatch for the database's refusal of
   * this order in a batch), or with the error of the call it went in, when that call failed whole.
   */
  make(call: C): Promise<R> {
    if (
      this.#waiting.length >= this.#options.waitingMax &&
      this.#inFlight >= this.#options.callsInFlightMax
    ) {
      return this.#alone(call);
    }
    return new Promise<R>((resolve, reject) => {
      const w: Waiting<C, R> = { call, resolve, reject, timer: undefined };
      this.#waiting.push(w);
      this.#drain();
      if (this.#waiting.includes(w)) {
        w.timer = setTimeout(() => {
          this.#waiting = this.#waiting.filter((x) => x !== w);
          this.#alone(call).then(resolve, reject);
        }, this.#options.waitMs);
        w.timer.unref();
      }
    });
  }

  /** The order alone, outside the calls the queue counts in flight. */
  #alone(call: C): Promise<R> {
    this.#calls.observe(1);
    return this.#send.one(call);
  }

  #drain(): void {
    while (this.#inFlight < this.#options.callsInFlightMax && this.#waiting.length > 0)
      this.#start(this.#take());
  }

  /** The next call's orders: the first waiting of each lock group, in the groups' order. */
  #take(): Waiting<C, R>[] {
    if (this.#group === undefined) {
      const batch = this.#waiting.slice(0, this.#options.batchMax);
      this.#waiting = this.#waiting.slice(batch.length);
      for (const w of batch) clearTimeout(w.timer);
      return batch;
    }
    const taken = new Map<string, { w: Waiting<C, R>; group: LockGroup }>();
    const left: Waiting<C, R>[] = [];
    for (const w of this.#waiting) {
      const group = this.#group(w.call);
      const key = `${group.slot} ${group.partnerId.toLowerCase()}`;
      if (taken.size < this.#options.batchMax && !taken.has(key)) taken.set(key, { w, group });
      else left.push(w);
    }
    this.#waiting = left;
    for (const { w } of taken.values()) clearTimeout(w.timer);
    return [...taken.values()].sort((a, b) => compareLockGroups(a.group, b.group)).map(({ w }) => w);
  }

  #start(batch: Waiting<C, R>[]): void {
    this.#inFlight++;
    this.#calls.observe(batch.length);
    const done = (): void => {
      this.#inFlight--;
      this.#drain();
    };
    if (batch.length === 1) {
      const [w] = batch as [Waiting<C, R>];
      this.#send.one(w.call).then(w.resolve, w.reject).finally(done);
      return;
    }
    const failAll = (err: unknown): void => {
      for (const w of batch) w.reject(err);
    };
    // Each order alone, the call still in flight until all are answered.
    const eachAlone = (): Promise<unknown> =>
      Promise.all(batch.map((w) => this.#alone(w.call).then(w.resolve, w.reject)));
    this.#send
      .many(batch.map((w) => w.call))
      .then(
        (outcomes) => {
          if (outcomes.length !== batch.length) throw new Error("a call answered another number of orders");
          batch.forEach((w, i) => {
            const outcome = outcomes[i];
            if (outcome instanceof RefusedInBatch) w.reject(outcome);
            else w.resolve(outcome as R);
          });
        },
        (err: unknown) => (err instanceof RetryAlone ? eachAlone() : failAll(err)),
      )
      .catch(failAll)
      .finally(done);
  }
}

/** By slot, then partner, as PostgreSQL orders (smallint, uuid): a uuid's bytes are its hex digits. */
function compareLockGroups(a: LockGroup, b: LockGroup): number {
  if (a.slot !== b.slot) return a.slot - b.slot;
  const p = a.partnerId.toLowerCase();
  const q = b.partnerId.toLowerCase();
  return p < q ? -1 : p > q ? 1 : 0;
}
