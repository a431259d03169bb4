// Operator changes to the catalog: assets and their flags. Expected failures are values.

import type { Db } from "../../db/database.ts";
import { inTransaction } from "../../db/transaction.ts";
import type { Clock } from "../../platform/clock.ts";
import { type AuditNote, recordAudit } from "../audit/index.ts";
import { assetInUse, findAsset, insertAsset, updateAsset } from "./catalog-store.ts";
import { type AssetChangesBody, assetView } from "./catalog-views.ts";

/** The body's changes, its USD rate parsed: the value of one unit at scale 8; null clears it. */
export type AssetChanges = Omit<AssetChangesBody, "usd_rate"> & { usd_rate?: bigint | null };

export type AssetUpsertResult =
  | { ok: true; created: boolean; asset: ReturnType<typeof assetView> }
  | { ok: false; error: "invalid_asset_id" | "new_asset_needs_type_and_name" }
  | { ok: false; error: "asset_in_use"; field: "type" | "decimal_places" };

export class CatalogAdminService {
  readonly #db: Db;
  readonly #clock: Clock;
  constructor(db: Db, clock: Clock) {
    this.#db = db;
    this.#clock = clock;
  }

  /** Creates the asset or changes the given fields of an existing one; the change goes on the audit trail. */
  async upsertAsset(id: string, changes: AssetChanges, note: AuditNote): Promise<AssetUpsertResult> {
    if (!/^[A-Z0-9]{2,10}$/.test(id)) return { ok: false, error: "invalid_asset_id" };
    return inTransaction(this.#db, async (tx) => {
      const before = await findAsset(tx, id);
      const result = await this.#upsert(tx, id, changes);
      if (result.ok && (result.created || Object.keys(changes).length > 0)) {
        await recordAudit(tx, this.#clock, note, {
          action: result.created ? "asset.create" : "asset.update",
          targetType: "asset",
          targetId: id,
          before: before === undefined ? null : assetView(before),
          after: result.asset,
        });
      }
      return result;
    });
  }

  async #upsert(db: Db, id: string, changes: AssetChanges): Promise<AssetUpsertResult> {
    const existing = await findAsset(db, id);
    if (existing === undefined) {
      if (changes.type === undefined || changes.name_en === undefined) {
        return { ok: false, error: "new_asset_needs_type_and_name" };
      }
      const row = await insertAsset(db, {
        id,
        type: changes.type,
        name_en: changes.name_en,
        decimal_places: changes.decimal_places ?? (changes.type === "fiat" ? 2 : 8),
        published: changes.published ?? false,
        depositable: changes.depositable ?? false,
        withdrawable: changes.withdrawable ?? false,
        usd_rate: changes.usd_rate ?? null,
      });
      return { ok: true, created: true, asset: assetView(row) };
    }
    if (Object.keys(changes).length === 0) return { ok: true, created: false, asset: assetView(existing) };
    // An asset held in accounts or traded in pairs keeps its type and its decimal places: a fiat
    // currency made crypto would refuse its own deposits (2012) with balances still in it, and
    // amounts are checked against the places they were taken with.
    const field =
      changes.type !== undefined && changes.type !== existing.type
        ? "type"
        : changes.decimal_places !== undefined && changes.decimal_places !== existing.decimal_places
          ? "decimal_places"
          : null;
    if (field !== null) {
      if (await assetInUse(db, id)) return { ok: false, error: "asset_in_use", field };
    }
    return { ok: true, created: false, asset: assetView(await updateAsset(db, id, changes)) };
  }
}
