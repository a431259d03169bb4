// Operator changes to the catalog: assets and their flags. Expected failures are values.

import type { Db } from "../../db/database.ts";
import { findAsset } from "./catalog-store.ts";
import { assetView } from "./catalog-views.ts";

export interface AssetChanges {
  type?: "fiat" | "crypto";
  name_en?: string;
  decimal_places?: number;
  published?: boolean;
  depositable?: boolean;
  withdrawable?: boolean;
  /** USD value of one unit, NUMERIC text; null clears it */
  usd_rate?: string | null;
}

export type AssetUpsertResult =
  | { ok: true; created: boolean; asset: ReturnType<typeof assetView> }
  | { ok: false; error: "invalid_asset_id" | "new_asset_needs_type_and_name" };

/** Creates the asset or changes the given fields of an existing one. */
export async function upsertAsset(db: Db, id: string, changes: AssetChanges): Promise<AssetUpsertResult> {
  if (!/^[A-Z0-9]{2,10}$/.test(id)) return { ok: false, error: "invalid_asset_id" };
  const existing = await findAsset(db, id);
  if (existing === undefined) {
    if (changes.type === undefined || changes.name_en === undefined) {
      return { ok: false, error: "new_asset_needs_type_and_name" };
    }
    const row = await db
      .insertInto("assets")
      .values({
        id,
        type: changes.type,
        name_en: changes.name_en,
        decimal_places: changes.decimal_places ?? (changes.type === "fiat" ? 2 : 8),
        published: changes.published ?? false,
        depositable: changes.depositable ?? false,
        withdrawable: changes.withdrawable ?? false,
        usd_rate: changes.usd_rate ?? null,
      })
      .returningAll()
      .executeTakeFirstOrThrow();
    return { ok: true, created: true, asset: assetView(row) };
  }
  if (Object.keys(changes).length === 0) return { ok: true, created: false, asset: assetView(existing) };
  const row = await db
    .updateTable("assets")
    .set(changes)
    .where("id", "=", id)
    .returningAll()
    .executeTakeFirstOrThrow();
  return { ok: true, created: false, asset: assetView(row) };
}
