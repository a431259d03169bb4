// Deposits and withdrawals committed together (docs/decisions.md, "Deposits committed together").
// While a process's funding call is in the database, the orders that arrive wait here, and go
// together in the next call, fund_orders() (migration 0024): one transaction and one flush of its
// WAL for all of them, each order in a block of its own, so that each is answered exactly as its own
// statement would have been. An order that finds nothing in flight goes at once, alone, with
// fund_order(): a lone deposit waits for nothing.
//
// A call takes at most one order per house slot and partner, in ascending order of the two: every
// order locks its client's accounts, then its partner's house accounts of its slot, so batches
// take their locks in one global order and never wait on each other in a cycle. An order whose
// slot and partner are taken waits for the next call, ahead of those that came after it. Every wait is bounded: an order that has waited
// `waitMs` for a call (the database slow or gone), or that finds `waitingMax` orders waiting, goes
// alone on a connection of its own, as it would without the queue (the pool bounds that wait, and
// the statement's own bound its answer).

import type { Selectable } from "kysely";
import { Histogram } from "prom-client";
import { limits } from "../../config/limits.ts";
import type { OrdersTable } from "../../db/schema.ts";
import type { FundingCall, FundingOutcome } from "./funding-store.ts";
import { FundingOrderRefused } from "./funding-store.ts";

type Order = Selectable<OrdersTable>;

/** How the queue reaches the database: one order (fundOrder()), or several (fundOrders()). */
export interface FundingSender {
  one(call: FundingCall): Promise<Order>;
  many(calls: readonly FundingCall[]): Promise<FundingOutcome[]>;
}

export interface FundingQueueOptions {
  /** Orders in one call; at most one per house slot, so at most the slots' number. */
  batchMax: number;
  /** Orders waiting for a call; past it, an order goes alone. */
  waitingMax: number;
  /** Calls of the queue in the database at once. */
  callsInFlightMax: number;
  /** How long an order waits for a call before it goes alone. */
  waitMs: number;
}

export type FundingCallsHistogram = Histogram<never>;

/** Orders per funding call, for an operator to see whether orders are committed together. */
export function fundingCallsHistogram(): FundingCallsHistogram {
  return new Histogram({
    name: "counterpart_funding_orders_per_call",
    help: "Deposits and withdrawals per statement of the database: 1 alone (fund_order), more committed together (fund_orders)",
    buckets: [1, 2, 4, 8, 16],
    registers: [],
  });
}

interface Waiting {
  call: FundingCall;
  resolve: (order: Order) => void;
  reject: (err: unknown) => void;
  timer: NodeJS.Timeout | undefined;
}

export class FundingQueue {
  readonly #send: FundingSender;
  readonly #options: FundingQueueOptions;
  readonly #calls: FundingCallsHistogram;
  #inFlight = 0;
  #waiting: Waiting[] = [];

  constructor(
    send: FundingSender,
    calls: FundingCallsHistogram = fundingCallsHistogram(),
    options: FundingQueueOptions = {
      batchMax: limits.fundingBatchMax,
      waitingMax: limits.fundingWaitingMax,
      callsInFlightMax: limits.fundingCallsInFlightMax,
      waitMs: limits.fundingWaitMs,
    },
  ) {
    if (
      !(
        options.batchMax >= 1 &&
        options.waitingMax >= 0 &&
        options.callsInFlightMax >= 1 &&
        options.waitMs >= 0
      )
    )
      throw new Error("a funding queue needs a batch of one, and one call in flight, at least");
    this.#send = send;
    this.#options = options;
    this.#calls = calls;
  }

  /** Orders waiting for a call now. */
  get waiting(): number {
    return this.#waiting.length;
  }

  /**
   * Makes the order, alone or with others: resolves with it, or rejects with what its own
   * statement would have thrown (a FundingOrderRefused for the database's refusal of this order),
   * or with the error of the call it went in, when that call failed as a whole.
   */
  fund(call: FundingCall): Promise<Order> {
    if (
      this.#waiting.length >= this.#options.waitingMax &&
      this.#inFlight >= this.#options.callsInFlightMax
    ) {
      return this.#alone(call);
    }
    return new Promise<Order>((resolve, reject) => {
      const w: Waiting = { call, resolve, reject, timer: undefined };
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
  #alone(call: FundingCall): Promise<Order> {
    this.#calls.observe(1);
    return this.#send.one(call);
  }

  #drain(): void {
    while (this.#inFlight < this.#options.callsInFlightMax && this.#waiting.length > 0)
      this.#start(this.#take());
  }

  /** The next call's orders: the first waiting of each house slot and partner, in their order. */
  #take(): Waiting[] {
    const taken = new Map<string, Waiting>();
    const left: Waiting[] = [];
    for (const w of this.#waiting) {
      const key = lockGroup(w.call);
      if (taken.size < this.#options.batchMax && !taken.has(key)) taken.set(key, w);
      else left.push(w);
    }
    this.#waiting = left;
    for (const w of taken.values()) clearTimeout(w.timer);
    return [...taken.values()].sort((a, b) => compareLockGroups(a.call, b.call));
  }

  #start(batch: Waiting[]): void {
    this.#inFlight++;
    this.#calls.observe(batch.length);
    const done = (): void => {
      this.#inFlight--;
      this.#drain();
    };
    if (batch.length === 1) {
      const [w] = batch as [Waiting];
      this.#send.one(w.call).then(w.resolve, w.reject).finally(done);
      return;
    }
    this.#send
      .many(batch.map((w) => w.call))
      .then(
        (outcomes) => {
          if (outcomes.length !== batch.length)
            throw new Error("a funding call answered another number of orders");
          batch.forEach((w, i) => {
            const outcome = outcomes[i];
            if (outcome instanceof FundingOrderRefused) w.reject(outcome);
            else w.resolve(outcome as Order);
          });
        },
        (err: unknown) => {
          for (const w of batch) w.reject(err);
        },
      )
      .catch((err: unknown) => {
        for (const w of batch) w.reject(err);
      })
      .finally(done);
  }
}

/** The rows an order locks besides its client's: its partner's house accounts of its slot. */
function lockGroup(call: FundingCall): string {
  return `${call.order.slot} ${call.order.partnerId.toLowerCase()}`;
}

/** By slot, then partner, as PostgreSQL orders (smallint, uuid): a uuid's bytes are its hex digits. */
function compareLockGroups(a: FundingCall, b: FundingCall): number {
  if (a.order.slot !== b.order.slot) return a.order.slot - b.order.slot;
  const p = a.order.partnerId.toLowerCase();
  const q = b.order.partnerId.toLowerCase();
  return p < q ? -1 : p > q ? 1 : 0;
}
