// Client balances (spec §2.6, §4.2): one entry per catalog asset, zeros included, with USD values
// from the asset's rate: 1 for USD, else the sell price of ASSET-USD, else the catalog's reference
// rate (DESIGN "Trading").

import { formatDecimal, mul } from "@counterpart/protocol";
import type { Db } from "../../db/database.ts";
import { moneyFromPg } from "../../db/numeric.ts";
import { findAsset, listAssets } from "../catalog/catalog-store.ts";
import { lookUpClient } from "../clients/client-check.ts";
import { clientBalances } from "./ledger-store.ts";

export interface BalanceView {
  asset_id: string;
  balance: string;
  available_balance: string;
  balance_usd: string;
  available_balance_usd: string;
}

export type BalancesResult = { ok: true; items: BalanceView[] } | { ok: false; error: "invalid_client" };
export type BalanceResult =
  | { ok: true; balance: BalanceView }
  | { ok: false; error: "invalid_client" | "invalid_asset" };

export class BalancesService {
  readonly #db: Db;
  constructor(db: Db) {
    this.#db = db;
  }

  /** Errors: invalid_client (2008). */
  async list(partnerId: string, partnerClientId: string): Promise<BalancesResult> {
    const client = await lookUpClient(this.#db, partnerId, partnerClientId);
    if (!client.ok) return client;
    const [assets, balances, rates] = await Promise.all([
      listAssets(this.#db),
      clientBalances(this.#db, client.client.id),
      this.#usdRates(),
    ]);
    return {
      ok: true,
      items: assets.map((a) => view(a.id, balances.get(a.id), rates.get(a.id) ?? 0n)),
    };
  }

  /** Errors: invalid_client (2008), then invalid_asset (2012) for an asset not in the catalog. */
  async get(partnerId: string, partnerClientId: string, assetId: string): Promise<BalanceResult> {
    const client = await lookUpClient(this.#db, partnerId, partnerClientId);
    if (!client.ok) return client;
    const asset = await findAsset(this.#db, assetId);
    if (asset === undefined) return { ok: false, error: "invalid_asset" };
    const [balances, rates] = await Promise.all([
      clientBalances(this.#db, client.client.id),
      this.#usdRates(),
    ]);
    return { ok: true, balance: view(asset.id, balances.get(asset.id), rates.get(asset.id) ?? 0n) };
  }

  async #usdRates(): Promise<Map<string, bigint>> {
    const [assets, pairs] = await Promise.all([
      this.#db.selectFrom("assets").select(["id", "usd_rate"]).execute(),
      this.#db.selectFrom("asset_pairs").select(["base_id", "sell"]).where("quote_id", "=", "USD").execute(),
    ]);
    const rates = new Map<string, bigint>();
    for (const a of assets) if (a.usd_rate !== null) rates.set(a.id, moneyFromPg(a.usd_rate));
    for (const p of pairs) rates.set(p.base_id, moneyFromPg(p.sell));
    rates.set("USD", 100_000_000n);
    return rates;
  }
}

function view(
  assetId: string,
  row: { balance: bigint; available: bigint } | undefined,
  usdRate: bigint,
): BalanceView {
  const balance = row?.balance ?? 0n;
  const available = row?.available ?? 0n;
  // USD values are an indication, rounded down: never more than the holding is worth.
  return {
    asset_id: assetId,
    balance: formatDecimal(balance),
    available_balance: formatDecimal(available),
    balance_usd: formatDecimal(mul(balance, usdRate, "down")),
    available_balance_usd: formatDecimal(mul(available, usdRate, "down")),
  };
}
