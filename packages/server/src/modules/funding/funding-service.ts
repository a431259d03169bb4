// Fiat deposits and withdrawals: one order, final in the response, its postings and balance change
// in the same transaction. Checks run in the order of docs/decisions.md: the amount (422: greater
// than zero, at most 8 decimal places, whatever the asset's decimal_places), reference (2020),
// client (2008, 2009, 2010), asset (2012), funds (3005).

import type { ErrorName } from "@counterpart/protocol";
import type { Db } from "../../db/database.ts";
import { databaseError, isDuplicateOrderRef, isUnavailable } from "../../db/errors.ts";
import { withRetries } from "../../db/transaction.ts";
import { judgeClient } from "../clients/index.ts";
import { type OrderView, orderView, refTaken } from "../orders/index.ts";
import { fundingLegs } from "./funding-legs.ts";
import {
  type FundingOrder,
  fundingFacts,
  fundOrder,
  type OrderSignature,
  signedFundOrder,
} from "./funding-store.ts";

/**
 * A request whose signature the order's own statement records (modules/partners, SignedWrite):
 * told what that statement did, and settled by a statement of its own when it did not record.
 */
export interface SignedOrderRequest extends OrderSignature {
  readonly open: boolean;
  recorded(): void;
  replayed(): void;
  undecided(): void;
  settleForWrite(): Promise<ErrorName | null>;
}

/** The request, judged again by the partner's row, is answered by this error (SignedOrderRequest). */
class WriteRefused extends Error {
  readonly errorName: ErrorName;
  constructor(name: ErrorName) {
    super(name);
    this.errorName = name;
  }
}

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
  constructor(db: Db) {
    this.#db = db;
  }

  /**
   * `amount` may be as fine as 8 decimal places whatever the asset's decimal_places, and is stored
   * exactly (docs/decisions.md, "Amounts"). Errors: duplicate_order_ref, invalid_client,
   * client_not_verified, client_deactivated, invalid_asset.
   */
  deposit(partnerId: string, req: FundingRequest, signed?: SignedOrderRequest): Promise<FundingResult> {
    return this.#fund(partnerId, req, "deposit", signed);
  }

  /** Errors: as deposit, plus insufficient_funds_for_payment. */
  withdraw(partnerId: string, req: FundingRequest, signed?: SignedOrderRequest): Promise<FundingResult> {
    return this.#fund(partnerId, req, "withdrawal", signed);
  }

  /**
   * With `signed`, the order's statement also records the request's signature; a replay is then
   * `unauthorized`, and credentials changed since they were kept settle the request by the
   * partner's row before the order is posted.
   */
  async #fund(
    partnerId: string,
    req: FundingRequest,
    type: "deposit" | "withdrawal",
    signed: SignedOrderRequest | undefined,
  ): Promise<FundingResult> {
    // The client and the asset in one round trip; the checks then run in the documented order.
    const facts = await fundingFacts(this.#db, partnerId, req.partnerClientId, req.assetId);
    const asset = facts.asset;
    const client = judgeClient(facts.client ?? undefined);
    const usable =
      asset !== null &&
      asset.type === "fiat" &&
      asset.published &&
      (type === "deposit" ? asset.depositable : asset.withdrawable);
    // The reference comes first (a retry of a withdrawal that already spent the balance learns
    // 2020, and fetches its order, never 3005). When every other check passes, the unique index
    // decides, as fund_order() inserts the order before it moves any balance. Only a request that
    // fails another check looks the reference up: probing it on every request took PostgreSQL's
    // CPU per deposit up by half (docs/decisions.md, "One call per order").
    if (!client.ok || !usable) {
      if (await refTaken(this.#db, partnerId, req.partnerOrderRef))
        return { ok: false, error: "duplicate_order_ref" };
      if (!client.ok) return client;
      return { ok: false, error: "invalid_asset" };
    }

    // The order, its postings and both balances in one statement (fund_order, migration 0011).
    const { slot, legs } = fundingLegs(type, client.client.id, req.assetId, req.amount);
    const order: FundingOrder = {
      partnerId,
      clientId: client.client.id,
      ref: req.partnerOrderRef,
      type,
      assetId: req.assetId,
      amount: req.amount,
      legs,
      slot,
    };
    try {
      const row = await withRetries(() => this.#post(order, signed));
      return { ok: true, order: orderView({ ...row, partner_client_id: client.client.partnerClientId }) };
    } catch (err) {
      const kind = databaseError(err)?.kind;
      if (kind === "insufficient_funds") return { ok: false, error: "insufficient_funds_for_payment" };
      if (isDuplicateOrderRef(err)) return { ok: false, error: "duplicate_order_ref" };
      if (kind === "signature_used") return { ok: false, error: "unauthorized" };
      if (err instanceof WriteRefused) return { ok: false, error: err.errorName };
      throw err;
    }
  }

  /** Posts the order, recording the request's signature in its statement while that is open. */
  async #post(order: FundingOrder, signed: SignedOrderRequest | undefined) {
    if (signed === undefined || !signed.open) return fundOrder(this.#db, order);
    try {
      const row = await signedFundOrder(this.#db, order, signed);
      signed.recorded();
      return row;
    } catch (err) {
      const kind = databaseError(err)?.kind;
      if (kind === "signature_used") signed.replayed();
      // The connection failed: whether the statement committed, order and record, is not known,
      // so the request's answer (503) stands, never a 401 from finding its own record.
      else if (isUnavailable(err)) signed.undecided();
      if (kind !== "credentials_changed") throw err;
    }
    // The partner's row changed since this process kept it: the request is judged by the row as
    // it is now, its signature recorded by a statement of its own, before the order is posted.
    const refusal = await signed.settleForWrite();
    if (refusal !== null) throw new WriteRefused(refusal);
    return fundOrder(this.#db, order);
  }
}
