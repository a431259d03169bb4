// Fiat deposits and withdrawals: one order, final in the response, its postings and balance change
// in the same transaction. Checks run in the order of docs/decisions.md: the amount (422: greater
// than zero, at most 8 decimal places, whatever the asset's decimal_places), reference (2020),
// client (2008, 2009, 2010), asset (2012), funds (3005).

import type { ErrorName } from "@counterpart/protocol";
import type { Db } from "../../db/database.ts";
import { databaseError, isDuplicateOrderRef } from "../../db/errors.ts";
import { withRetries } from "../../db/transaction.ts";
import { judgeClient } from "../clients/index.ts";
import { type OrderView, orderView, refTaken } from "../orders/index.ts";
import { changeSigned, type SignedWrite, WriteRefused } from "../partners/index.ts";
import { fundingLegs } from "./funding-legs.ts";
import { type FundingOrder, fundingFacts, fundOrder } from "./funding-store.ts";

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
   * partner's row before the order is posted.
   */
  async #fund(
    partnerId: string,
    req: FundingRequest,
    type: "deposit" | "withdrawal",
    signed: SignedWrite | undefined,
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
      const row = await withRetries(() =>
        changeSigned(signed, (record) => fundOrder(this.#db, order, record)),
      );
      return { ok: true, order: orderView({ ...row, partner_client_id: client.client.partnerClientId }) };
    } catch (err) {
      const kind = databaseError(err)?.kind;
      if (kind === "insufficient_funds") return { ok: false, error: "insufficient_funds_for_payment" };
      if (isDuplicateOrderRef(err)) return { ok: false, error: "duplicate_order_ref" };
      if (err instanceof WriteRefused) return { ok: false, error: err.errorName };
      throw err;
    }
  }
}
