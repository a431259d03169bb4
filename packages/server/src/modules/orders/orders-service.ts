// Order look-ups for partners (docs/reference.md §4.5): by id, by the partner's reference, and a filtered,
// paginated list, newest first.

import type { CredentialWitness } from "../../db/credential-witness.ts";
import type { Db } from "../../db/database.ts";
import type { OrderSource, OrderStatus } from "../../db/schema.ts";
import type { Tx } from "../../db/transaction.ts";
import type { Clock } from "../../platform/clock.ts";
import { lookUpClient } from "../clients/index.ts";
import { partnersBehind, rollableUntil, rollNextDay } from "./order-days-store.ts";
import { type OrderPage, type OrderView, orderView } from "./order-views.ts";
import { findOrder, findOrderByRef, findOrdersByIds, listOrders } from "./orders-store.ts";

export interface OrderListQuery {
  partnerClientId: string | null;
  sources: OrderSource[];
  statuses: OrderStatus[];
  from: string | null;
  to: string | null;
  page: number;
  pageSize: number;
}

export type OrderListResult = ({ ok: true } & OrderPage) | { ok: false; error: "invalid_client" };

/** What one run of OrdersService.rollDays did. */
export interface RollResult {
  /** Days with orders counted into order_day_counts. */
  days: number;
  /** Whether every partner is rolled up to `until` (false: stopped first, or nothing may be rolled). */
  done: boolean;
  /** The day before which every partner's days are rolled (when done); null: none may be now. */
  until: string | null;
  /**
   * Sessions of the database whose transactions the service's role cannot see
   * (order-days-store.ts, transactionsBegun): while there are any, no day is rolled.
   */
  unseen: number;
}

export interface RollOptions {
  /** How long the run may go on (measured on the service's clock between transactions). */
  budgetMs: number;
  /** A day to roll no further than, when earlier than rollableUntil() (tests). */
  upTo?: string;
  /** Asked between transactions: true stops the run (housekeeping stopping). */
  stopping?: () => boolean;
}

export class OrdersService {
  readonly #db: Db;
  readonly #clock: Clock;
  constructor(db: Db, clock: Clock) {
    this.#db = db;
    this.#clock = clock;
  }

  /**
   * Rolls each partner's days that are over into order_day_counts (order-days-store.ts), a day
   * with orders per transaction, until every partner is rolled up, the budget is spent, or
   * `stopping()` says so; the next run goes on from there. A partner whose roll-up fails does not
   * hold the others back: the first failure is thrown once the others have had their turn.
   */
  async rollDays(options: RollOptions): Promise<RollResult> {
    const ends = this.#clock.nowMs() + options.budgetMs;
    const rollable = await rollableUntil(this.#db);
    if (rollable.until === null) return { days: 0, done: false, until: null, unseen: rollable.unseen };
    const until = options.upTo !== undefined && options.upTo < rollable.until ? options.upTo : rollable.until;
    let days = 0;
    let failed: { err: unknown } | null = null;
    let done = true;
    partners: for (const partnerId of await partnersBehind(this.#db, until)) {
      try {
        for (;;) {
          if (this.#clock.nowMs() >= ends || options.stopping?.() === true) {
            done = false;
            break partners;
          }
          if ((await rollNextDay(this.#db, partnerId, until)) === "done") break;
          days += 1;
        }
      } catch (err) {
        failed ??= { err };
      }
    }
    if (failed !== null) throw failed.err;
    return { days, done, until, unseen: rollable.unseen };
  }

  /** null when absent or another partner's (404). */
  async get(partnerId: string, id: number, witness?: CredentialWitness): Promise<OrderView | null> {
    const row = await findOrder(this.#db, partnerId, id, witness);
    return row ? orderView(row) : null;
  }

  /** null when no order of the partner has this reference (404). */
  async getByRef(partnerId: string, ref: string, witness?: CredentialWitness): Promise<OrderView | null> {
    const row = await findOrderByRef(this.#db, partnerId, ref, witness);
    return row ? orderView(row) : null;
  }

  /**
   * The partner's orders among `ids`, as the API shows them, by id (absent ids are left out); in
   * the caller's transaction when given one.
   */
  async views(
    partnerId: string,
    ids: readonly number[],
    q: Db | Tx = this.#db,
  ): Promise<Map<number, OrderView>> {
    const rows = await findOrdersByIds(q, partnerId, ids);
    return new Map(rows.map((r) => [r.id, orderView(r)]));
  }

  /** Errors: invalid_client (2008) for a partner_client_id filter that is not the partner's. */
  async list(partnerId: string, q: OrderListQuery, witness?: CredentialWitness): Promise<OrderListResult> {
    let clientId: number | null = null;
    if (q.partnerClientId !== null) {
      const client = await lookUpClient(this.#db, partnerId, q.partnerClientId);
      if (!client.ok) return client;
      clientId = client.client.id;
    }
    const { rows, total } = await listOrders(
      this.#db,
      partnerId,
      { clientId, sources: q.sources, statuses: q.statuses, from: q.from, to: q.to },
      q.page,
      q.pageSize,
      witness,
    );
    return { ok: true, items: rows.map(orderView), total, page: q.page, page_size: q.pageSize };
  }
}
