// Wire shapes of catalog records (spec §2.4, §2.5) and their schemas, one definition for both
// serialisation and the OpenAPI document.

import { formatDecimal } from "@counterpart/protocol";
import type { Selectable } from "kysely";
import { Type } from "typebox";
import { moneyFromPg } from "../../db/numeric.ts";
import type { AssetPairsTable, AssetsTable } from "../../db/schema.ts";

export const AssetSchema = Type.Object({
  id: Type.String(),
  type: Type.Union([Type.Literal("crypto"), Type.Literal("fiat")]),
  name_en: Type.String(),
  decimal_places: Type.Integer(),
  published: Type.Boolean(),
  depositable: Type.Boolean(),
  withdrawable: Type.Boolean(),
});

export const CountrySchema = Type.Object({ id: Type.String(), name: Type.String() });

export const AssetPairSchema = Type.Object({
  id: Type.String(),
  base_id: Type.String(),
  quote_id: Type.String(),
  buy: Type.String({ description: "decimal string" }),
  sell: Type.String({ description: "decimal string" }),
  tradable: Type.Boolean(),
});

export function assetView(a: Selectable<AssetsTable>) {
  return {
    id: a.id,
    type: a.type,
    name_en: a.name_en,
    decimal_places: a.decimal_places,
    published: a.published,
    depositable: a.depositable,
    withdrawable: a.withdrawable,
  };
}

export function pairView(
  p: Pick<Selectable<AssetPairsTable>, "id" | "base_id" | "quote_id" | "tradable" | "buy" | "sell">,
) {
  return {
    id: p.id,
    base_id: p.base_id,
    quote_id: p.quote_id,
    buy: formatDecimal(moneyFromPg(p.buy)),
    sell: formatDecimal(moneyFromPg(p.sell)),
    tradable: p.tradable,
  };
}
