// Client balances (docs/reference.md §2.6, §4.2): one entry per catalog asset, zeros included, with USD values
// from the asset's rate: 1 for USD, else the sell price of ASSET-USD, else the catalog's reference
// rate (docs/decisions.md "Trading").

import { formatDecimal, mul } from "@counterpart/protocol";
import type { CredentialWitness } from "../../db/credential-witness.ts";
import type { Db } from "../../db/database.ts";
import type { BalanceView } from "./balance-views.ts";
import { type BalanceSheetLine, balanceSheet } from "./ledger-store.ts";

export type BalancesResult = { ok: true; items: BalanceView[] } | { ok: false; error: "invalid_client" };
export type BalanceResult =
  | { ok: true; balance: BalanceView }
  | { ok: false; error: "invalid_client" | "invalid_asset" };

export class BalancesService {
  readonly #db: Db;
  constructor(db: Db) {
    this.#db = db;
  }

  /**
   * Errors: invalid_client (2008). One statement (balanceSheet), which also carries the partner's
   * credentials when given a witness (db/credential-witness.ts).
   */
  async list(
    partnerId: string,
    partnerClientId: string,
    witness?: CredentialWitness,
  ): Promise<BalancesResult> {
    const sheet = await balanceSheet(this.#db, partnerId, partnerClientId, null, witness);
    if (sheet === undefined) return { ok: false, error: "invalid_client" };
    return { ok: true, items: sheet.lines.map(view) };
  }

  /** Errors: invalid_client (2008), then invalid_asset (2012) for an asset not in the catalog. */
  async get(
    partnerId: string,
    partnerClientId: string,
    assetId: string,
    witness?: CredentialWitness,
  ): Promise<BalanceResult> {
    const sheet = await balanceSheet(this.#db, partnerId, partnerClientId, assetId, witness);
    if (sheet === undefined) return { ok: false, error: "invalid_client" };
    const line = sheet.lines[0];
    if (line === undefined) return { ok: false, error: "invalid_asset" };
    return { ok: true, balance: view(line) };
  }
}

function view({ assetId, balance, available, usdRate }: BalanceSheetLine): BalanceView {
  // USD values are an indication, rounded down: never more than the holding is worth.
  return {
    asset_id: assetId,
    balance: formatDecimal(balance),
    available_balance: formatDecimal(available),
    balance_usd: formatDecimal(mul(balance, usdRate, "down")),
    available_balance_usd: formatDecimal(mul(available, usdRate, "down")),
  };
}
