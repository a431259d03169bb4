// Fiat deposits and withdrawals (spec §4.4): one order, final in the response, its postings and
// balance change in the same transaction. Checks run in DESIGN's order: reference (2020), client
// (2008, 2009, 2010), asset (2012), funds (3005).

import type { ErrorName, FieldError } from "@counterpart/protocol";
import { sql } from "kysely";
import { type Db, preparedMarker } from "../../db/database.ts";
import { pgConstraint, pgErrorCode, withRetries } from "../../db/transaction.ts";
import { judgeClient } from "../clients/client-check.ts";
import { fundOrder, insufficientFundsCode } from "../ledger/ledger-store.ts";
import { type OrderView, orderView, refTaken } from "../orders/index.ts";

export interface FundingRequest {
  partnerClientId: string;
  assetId: string;
  /** > 0, at scale 8 */
  amount: bigint;
  partnerOrderRef: string;
}

export type FundingResult =
  | { ok: true; order: OrderView }
  | { ok: false; error: ErrorName; detail?: FieldError[] };

/** An amount finer than the asset's decimal places (1.005 of a 2-decimal currency). */
export function finerThanAsset(amount: bigint, decimalPlaces: number): boolean {
  return amount % 10n ** BigInt(8 - decimalPlaces) !== 0n;
}

export function decimalPlacesError(loc: (string | number)[], decimalPlaces: number): FieldError {
  return {
    loc,
    msg: `Decimal input should have no more than ${decimalPlaces} decimal place${decimalPlaces === 1 ? "" : "s"}`,
    type: "decimal_max_places",
  };
}

export function isDuplicateRef(err: unknown): boolean {
  return pgErrorCode(err) === "23505" && pgConstraint(err) === "orders_partner_order_ref_key";
}

interface FundingFacts {
  client: { id: number; partner_client_id: string; status: string; active: boolean } | null;
  asset: {
    type: string;
    published: boolean;
    depositable: boolean;
    withdrawable: boolean;
    decimal_places: number;
  } | null;
}

/** The client and the asset of a funding request, read in one query. */
async function fundingFacts(db: Db, partnerId: string, req: FundingRequest): Promise<FundingFacts> {
  const { rows } = await sql<FundingFacts>`${sql.raw(preparedMarker)}
    SELECT
      (SELECT json_build_object('id', id, 'partner_client_id', partner_client_id, 'status', status, 'active', active)
         FROM clients WHERE partner_id = ${partnerId} AND partner_client_id = ${req.partnerClientId}) AS client,
      (SELECT json_build_object('type', type, 'published', published, 'depositable', depositable,
                                'withdrawable', withdrawable, 'decimal_places', decimal_places)
         FROM assets WHERE id = ${req.assetId}) AS asset
  `.execute(db);
  return rows[0]!;
}

export class FundingService {
  readonly #db: Db;
  constructor(db: Db) {
    this.#db = db;
  }

  /**
   * Errors: validation_error (an amount finer than the asset's decimal places), duplicate_order_ref,
   * invalid_client, client_not_verified, client_deactivated, invalid_asset.
   */
  deposit(partnerId: string, req: FundingRequest): Promise<FundingResult> {
    return this.#fund(partnerId, req, "deposit");
  }

  /** Errors: as deposit, plus insufficient_funds_for_payment. */
  withdraw(partnerId: string, req: FundingRequest): Promise<FundingResult> {
    return this.#fund(partnerId, req, "withdrawal");
  }

  async #fund(
    partnerId: string,
    req: FundingRequest,
    type: "deposit" | "withdrawal",
  ): Promise<FundingResult> {
    // The client and the asset in one round trip; the checks then run in DESIGN's order.
    const facts = await fundingFacts(this.#db, partnerId, req);
    const asset = facts.asset;
    // An amount the asset cannot hold is bad input, reported before anything else (422); an
    // unknown asset is left for the asset rule (2012) below.
    if (asset !== null && finerThanAsset(req.amount, asset.decimal_places)) {
      return {
        ok: false,
        error: "validation_error",
        detail: [decimalPlacesError(["body", "amount"], asset.decimal_places)],
      };
    }
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

    // The order, its postings and both balances in one statement (fund_order, migration 0008).
    try {
      const row = await withRetries(() =>
        fundOrder(this.#db, {
          partnerId,
          clientId: client.client.id,
          ref: req.partnerOrderRef,
          type,
          assetId: req.assetId,
          amount: req.amount,
        }),
      );
      return { ok: true, order: orderView({ ...row, partner_client_id: client.client.partnerClientId }) };
    } catch (err) {
      if (pgErrorCode(err) === insufficientFundsCode)
        return { ok: false, error: "insufficient_funds_for_payment" };
      if (isDuplicateRef(err)) return { ok: false, error: "duplicate_order_ref" };
      throw err;
    }
  }
}
