// Fiat deposits and withdrawals: one order, final in the response, its postings and balance change
// in the same transaction. Checks run in the order of docs/decisions.md: the amount (422: greater
// than zero, at most 8 decimal places, whatever the asset's decimal_places), reference (2020),
// client (2008, 2009, 2010), asset (2012), funds (3005).

import type { ErrorName } from "@counterpart/protocol";
import type { Selectable } from "kysely";
import type { Db } from "../../db/database.ts";
import { databaseError, isDuplicateOrderRef } from "../../db/errors.ts";
import type { OrdersTable } from "../../db/schema.ts";
import { withRetries } from "../../db/transaction.ts";
import { type KeptFactsCounter, keptFactsCounter } from "../../platform/kept-facts-metric.ts";
import { judgeClient } from "../clients/index.ts";
import { type CallSizes, OrderQueue, ordersPerCallHistogram } from "../ledger/index.ts";
import { type OrderView, orderView, refTaken } from "../orders/index.ts";
import { changeSigned, type SignedWrite, WriteRefused } from "../partners/index.ts";
import { fundingLegs } from "./funding-legs.ts";
import {
  type ClientFacts,
  type FundingCall,
  type FundingOrder,
  fundingFacts,
  fundOrder,
  fundOrders,
  type HeldFacts,
} from "./funding-store.ts";
import { KeptFundingFacts } from "./kept-facts.ts";

export interface FundingRequest {
  partnerClientId: string;
  assetId: string;
  /** > 0, at scale 8 */
  amount: bigint;
  partnerOrderRef: string;
}

export type FundingResult = { ok: true; order: OrderView } | { ok: false; error: ErrorName };

export class FundingService {
  readonly #db: Db;
  readonly #kept: KeptFundingFacts;
  readonly #judged: KeptFactsCounter;
  readonly #queue: OrderQueue<FundingCall, Selectable<OrdersTable>>;
  constructor(
    db: Db,
    kept: KeptFundingFacts = new KeptFundingFacts(),
    judged: KeptFactsCounter = keptFactsCounter(),
    calls: CallSizes = ordersPerCallHistogram().labels({ use: "funding" }),
  ) {
    this.#db = db;
    this.#kept = kept;
    this.#judged = judged;
    // Deposits and withdrawals that arrive together are committed together (docs/decisions.md,
    // "Orders committed together").
    this.#queue = new OrderQueue(
      {
        one: (call) => fundOrder(db, call.order, call.signed, call.held),
        many: (calls) => fundOrders(db, calls),
      },
      (call) => call.order,
      calls,
    );
  }

  /**
   * `amount` may be as fine as 8 decimal places whatever the asset's decimal_places, and is stored
   * exactly (docs/decisions.md, "Amounts"). Errors: duplicate_order_ref, invalid_client,
   * client_not_verified, client_deactivated, invalid_asset.
   */
  deposit(partnerId: string, req: FundingRequest, signed?: SignedWrite): Promise<FundingResult> {
    return this.#fund(partnerId, req, "deposit", signed);
  }

  /** Errors: as deposit, plus insufficient_funds_for_payment. */
  withdraw(partnerId: string, req: FundingRequest, signed?: SignedWrite): Promise<FundingResult> {
    return this.#fund(partnerId, req, "withdrawal", signed);
  }

  /**
   * With `signed`, the order's statement also records the request's signature; a replay is then
   * `unauthorized`, and credentials changed since they were kept settle the request by the
   * partner's row before the order is posted. A client and an asset whose facts this process kept
   * are judged by them, and the order's statement checks that their rows still hold them; when
   * they do not, nothing was written, and the request is judged again by the rows.
   */
  async #fund(
    partnerId: string,
    req: FundingRequest,
    type: "deposit" | "withdrawal",
    signed: SignedWrite | undefined,
  ): Promise<FundingResult> {
    const held = this.#kept.get(partnerId, req.partnerClientId, req.assetId);
    if (held !== undefined && passes(held, type)) {
      const result = await this.#post(partnerId, req, type, signed, held.client, held);
      if (result !== factsChanged) {
        this.#judged.inc({ use: type, outcome: "kept" });
        return result;
      }
      this.#kept.forget(partnerId, req.partnerClientId, req.assetId);
      this.#judged.inc({ use: type, outcome: "changed" });
    } else {
      this.#judged.inc({ use: type, outcome: "read" });
    }

    // The client and the asset in one round trip; the checks then run in the documented order.
    const facts = await fundingFacts(this.#db, partnerId, req.partnerClientId, req.assetId);
    const read =
      facts.client !== null && facts.asset !== null ? { client: facts.client, asset: facts.asset } : null;
    // The reference comes first (a retry of a withdrawal that already spent the balance learns
    // 2020, and fetches its order, never 3005). When every other check passes, the unique index
    // decides, as fund_order() inserts the order before it moves any balance. Only a request that
    // fails another check looks the reference up: probing it on every request took PostgreSQL's
    // CPU per deposit up by half (docs/decisions.md, "One call per order").
    if (read === null || !passes(read, type)) {
      this.#kept.forget(partnerId, req.partnerClientId, req.assetId);
      if (await refTaken(this.#db, partnerId, req.partnerOrderRef))
        return { ok: false, error: "duplicate_order_ref" };
      const client = judgeClient(facts.client ?? undefined);
      if (!client.ok) return client;
      return { ok: false, error: "invalid_asset" };
    }
    this.#kept.keep(partnerId, req.partnerClientId, req.assetId, read);
    const result = await this.#post(partnerId, req, type, signed, read.client, undefined);
    // Without facts held, the statement checks none: it cannot answer that they changed.
    if (result === factsChanged)
      throw new Error("fund_order answered facts changed for facts it was not given");
    return result;
  }

  /**
   * The order, its postings and both balances in one statement (fund_order, migration 0011), for a
   * request whose client and asset passed; with `held`, the statement first checks them.
   */
  async #post(
    partnerId: string,
    req: FundingRequest,
    type: "deposit" | "withdrawal",
    signed: SignedWrite | undefined,
    client: ClientFacts,
    held: HeldFacts | undefined,
  ): Promise<FundingResult | typeof factsChanged> {
    const { slot, legs } = fundingLegs(type, client.id, req.assetId, req.amount);
    const order: FundingOrder = {
      partnerId,
      clientId: client.id,
      ref: req.partnerOrderRef,
      type,
      assetId: req.assetId,
      amount: req.amount,
      legs,
      slot,
    };
    try {
      const row = await withRetries(() =>
        changeSigned(signed, (record) => this.#queue.make({ order, signed: record, held })),
      );
      return { ok: true, order: orderView({ ...row, partner_client_id: client.partner_client_id }) };
    } catch (err) {
      const kind = databaseError(err)?.kind;
      if (kind === "funding_facts_changed") return factsChanged;
      if (kind === "insufficient_funds") return { ok: false, error: "insufficient_funds_for_payment" };
      if (isDuplicateOrderRef(err)) return { ok: false, error: "duplicate_order_ref" };
      if (err instanceof WriteRefused) return { ok: false, error: err.errorName };
      throw err;
    }
  }
}

/** fund_order() found the facts held no longer true: nothing was written. */
const factsChanged = Symbol("funding facts changed");

/** Whether the client and the asset let a funding request of this type through. */
function passes(facts: HeldFacts, type: "deposit" | "withdrawal"): boolean {
  const { asset } = facts;
  return (
    judgeClient(facts.client).ok &&
    asset.type === "fiat" &&
    asset.published &&
    (type === "deposit" ? asset.depositable : asset.withdrawable)
  );
}
