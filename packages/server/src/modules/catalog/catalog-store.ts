// Queries on the catalog: countries, assets, asset pairs and their per-partner availability.

import type { Db } from "../../db/database.ts";
import type { Tx } from "../../db/transaction.ts";

type Q = Db | Tx;

export async function listCountries(db: Q) {
  return db
    .selectFrom("countries")
    .select(["id", "name"])
    .where("supported", "=", true)
    .orderBy("id")
    .execute();
}

export async function findCountry(db: Q, id: string) {
  return db.selectFrom("countries").selectAll().where("id", "=", id).executeTakeFirst();
}

export async function listAssets(db: Q) {
  return db.selectFrom("assets").selectAll().orderBy("type", "desc").orderBy("id").execute();
}

export async function findAsset(db: Q, id: string) {
  return db.selectFrom("assets").selectAll().where("id", "=", id).executeTakeFirst();
}

/** Pairs a partner may see: all pairs except those withheld from it. */
function pairsForPartner(db: Q, partnerId: string) {
  return db
    .selectFrom("asset_pairs as p")
    .leftJoin("partner_pairs as pp", (join) =>
      join.onRef("pp.pair_id", "=", "p.id").on("pp.partner_id", "=", partnerId),
    )
    .selectAll("p")
    .where((eb) => eb.or([eb("pp.available", "is", null), eb("pp.available", "=", true)]));
}

export async function listPairsForPartner(db: Q, partnerId: string) {
  return pairsForPartner(db, partnerId).orderBy("p.id").execute();
}

export async function findPairForPartner(db: Q, partnerId: string, pairId: string) {
  return pairsForPartner(db, partnerId).where("p.id", "=", pairId).executeTakeFirst();
}
