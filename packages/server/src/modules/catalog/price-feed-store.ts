// Queries of the price feed: the pairs' current prices, and the feed's new ones written.

import { type Selectable, sql } from "kysely";
import type { Db } from "../../db/database.ts";
import { moneyFromPg, moneyToPg } from "../../db/numeric.ts";
import type { AssetPairsTable } from "../../db/schema.ts";
import { isoFromMs } from "../../db/time.ts";

export type PairRow = Selectable<AssetPairsTable>;

/** A pair's prices, at scale 8. */
export interface PairPrice {
  id: string;
  buy: bigint;
  sell: bigint;
}

const price = (r: { id: string; buy: string; sell: string }): PairPrice => ({
  id: r.id,
  buy: moneyFromPg(r.buy),
  sell: moneyFromPg(r.sell),
});

export async function findPairPrice(db: Db, pairId: string): Promise<PairPrice | undefined> {
  const row = await db
    .selectFrom("asset_pairs")
    .select(["id", "buy", "sell"])
    .where("id", "=", pairId)
    .executeTakeFirst();
  return row === undefined ? undefined : price(row);
}

/** The prices of every pair the operator has not pinned, by id. */
export async function unpinnedPairPrices(db: Db): Promise<PairPrice[]> {
  const rows = await db
    .selectFrom("asset_pairs")
    .select(["id", "buy", "sell"])
    .where("price_pinned", "=", false)
    .orderBy("id")
    .execute();
  return rows.map(price);
}

/** Writes the feed's price for one pair and unpins it; the updated row, if the pair exists. */
export async function resumePairPrice(db: Db, p: PairPrice, atMs: number): Promise<PairRow | undefined> {
  return db
    .updateTable("asset_pairs")
    .set({ buy: moneyToPg(p.buy), sell: moneyToPg(p.sell), price_at: isoFromMs(atMs), price_pinned: false })
    .where("id", "=", p.id)
    .returningAll()
    .executeTakeFirst();
}

/** Writes the feed's prices in one statement, leaving alone any pair pinned in the meantime. */
export async function writeFeedPrices(db: Db, prices: readonly PairPrice[], atMs: number): Promise<void> {
  await sql`
    UPDATE asset_pairs AS p
    SET buy = v.buy::numeric, sell = v.sell::numeric, price_at = ${isoFromMs(atMs)}::timestamptz
    FROM (VALUES ${sql.join(prices.map((r) => sql`(${r.id}, ${moneyToPg(r.buy)}, ${moneyToPg(r.sell)})`))}) AS v(id, buy, sell)
    WHERE p.id = v.id AND p.price_pinned = false
  `.execute(db);
}
