// Queries on the catalog: countries, assets, asset pairs and their per-partner availability.

import { type Insertable, sql } from "kysely";
import { type CredentialWitness, WitnessedRead } from "../../db/credential-witness.ts";
import type { Db } from "../../db/database.ts";
import { moneyToPg } from "../../db/numeric.ts";
import type { AssetPairsTable, AssetsTable, CountriesTable } from "../../db/schema.ts";
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

/**
 * Whether an asset is in use: an account holds it (every order posts to accounts of its assets)
 * or a pair trades it. The asset's row is locked first (the caller's transaction holds it), so no
 * account or pair appears meanwhile that a change of its type or decimal places would misread.
 */
export async function assetInUse(db: Q, id: string): Promise<boolean> {
  await db.selectFrom("assets").select("id").where("id", "=", id).forUpdate().execute();
  const row = await db
    .selectNoFrom((eb) => [
      eb
        .or([
          eb.exists(eb.selectFrom("accounts").select("asset_id").where("asset_id", "=", id)),
          eb.exists(
            eb
              .selectFrom("asset_pairs")
              .select("id")
              .where((w) => w.or([w("base_id", "=", id), w("quote_id", "=", id)])),
          ),
        ])
        .as("used"),
    ])
    .executeTakeFirstOrThrow();
  return row.used === true;
}

/** An asset's stored fields, its USD rate at scale 8 (null: none). */
export type AssetFields = Omit<Insertable<AssetsTable>, "usd_rate"> & { usd_rate: bigint | null };

export async function insertAsset(db: Q, a: AssetFields) {
  return db
    .insertInto("assets")
    .values({ ...a, usd_rate: a.usd_rate === null ? null : moneyToPg(a.usd_rate) })
    .returningAll()
    .executeTakeFirstOrThrow();
}

/** Changes the given fields of an existing asset (at least one). */
export async function updateAsset(db: Q, id: string, changes: Partial<Omit<AssetFields, "id">>) {
  const { usd_rate, ...rest } = changes;
  return db
    .updateTable("assets")
    .set({
      ...rest,
      ...(usd_rate === undefined ? {} : { usd_rate: usd_rate === null ? null : moneyToPg(usd_rate) }),
    })
    .where("id", "=", id)
    .returningAll()
    .executeTakeFirstOrThrow();
}

/** What a partner sees of a pair, by name (the reads are kept and prepared: db/kept-statement.ts). */
const partnerPairColumns = ["p.id", "p.base_id", "p.quote_id", "p.buy", "p.sell", "p.tradable"] as const;

/** Pairs a partner may see: all pairs except those withheld from it. */
function pairsForPartner(db: Q, partnerId: string) {
  return db
    .selectFrom("asset_pairs as p")
    .leftJoin("partner_pairs as pp", (join) =>
      join.onRef("pp.pair_id", "=", "p.id").on("pp.partner_id", "=", partnerId),
    )
    .select(partnerPairColumns)
    .where((eb) => eb.or([eb("pp.available", "is", null), eb("pp.available", "=", true)]));
}

const pairsRead = new WitnessedRead(
  (db, p: { partnerId: string }) => pairsForPartner(db, p.partnerId).orderBy("p.id"),
  // The credentials ride on the first row alone (the window orders as the statement does), not
  // on each pair's row.
  (column) => sql`CASE WHEN row_number() OVER (ORDER BY p.id) = 1 THEN ${column} END`,
);

const pairRead = new WitnessedRead((db, p: { partnerId: string; pairId: string }) =>
  pairsForPartner(db, p.partnerId).where("p.id", "=", p.pairId),
);

/**
 * The pairs a partner may see, kept and prepared (a signed read's hot path). With a witness, the
 * statement also carries the partner's credentials (db/credential-witness.ts).
 */
export async function listPairsForPartner(db: Q, partnerId: string, witness?: CredentialWitness) {
  return pairsRead.select(db, { partnerId }, witness);
}

export async function findPairForPartner(
  db: Q,
  partnerId: string,
  pairId: string,
  witness?: CredentialWitness,
) {
  return (await pairRead.select(db, { partnerId, pairId }, witness))[0];
}

/** Inserts catalog rows in one transaction; a row whose id is already there is left as it is. */
export async function insertCatalogRows(
  db: Db,
  rows: {
    countries: Insertable<CountriesTable>[];
    assets: Insertable<AssetsTable>[];
    pairs: Insertable<AssetPairsTable>[];
  },
): Promise<void> {
  await db.transaction().execute(async (tx) => {
    await tx
      .insertInto("countries")
      .values(rows.countries)
      .onConflict((oc) => oc.column("id").doNothing())
      .execute();
    await tx
      .insertInto("assets")
      .values(rows.assets)
      .onConflict((oc) => oc.column("id").doNothing())
      .execute();
    await tx
      .insertInto("asset_pairs")
      .values(rows.pairs)
      .onConflict((oc) => oc.column("id").doNothing())
      .execute();
  });
}
