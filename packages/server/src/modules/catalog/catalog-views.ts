// Wire shapes of catalog records (assets, pairs) and their schemas, one definition for both
// serialisation and the OpenAPI document; and the admin API's asset changes (not in that document).

import { assetTypes } from "@counterpart/protocol";
import type { Selectable } from "kysely";
import { type Static, Type } from "typebox";
import { decimalFromPg } from "../../db/numeric.ts";
import type { AssetPairsTable, AssetsTable } from "../../db/schema.ts";
import { literalUnion } from "../../platform/wire-schemas.ts";

export const AssetSchema = Type.Object(
  {
    id: Type.String(),
    type: literalUnion(assetTypes),
    name_en: Type.String(),
    decimal_places: Type.Integer(),
    published: Type.Boolean(),
    depositable: Type.Boolean(),
    withdrawable: Type.Boolean(),
  },
  { $id: "Asset" },
);

export const CountrySchema = Type.Object(
  {
    id: Type.String({ description: 'Lower-case two-letter id, e.g. "ae": the value client fields take.' }),
    name: Type.String(),
  },
  { $id: "Country" },
);

export const AssetPairSchema = Type.Object(
  {
    id: Type.String({ description: 'BASE-QUOTE, e.g. "BTC-AED".' }),
    base_id: Type.String(),
    quote_id: Type.String(),
    buy: Type.String({ description: "decimal string" }),
    sell: Type.String({ description: "decimal string" }),
    tradable: Type.Boolean(),
  },
  { $id: "AssetPair" },
);

/**
 * What `PUT /admin/assets/:asset_id` may change; a new asset needs type and name_en. usd_rate is
 * decimal text (null clears it), checked by the route. The type's literals keep this order, which
 * is the order a refusal names them in.
 */
export const AssetChangesBody = Type.Object(
  {
    type: Type.Optional(Type.Union([Type.Literal("fiat"), Type.Literal("crypto")])),
    name_en: Type.Optional(Type.String({ minLength: 1, maxLength: 255 })),
    decimal_places: Type.Optional(Type.Integer({ minimum: 0, maximum: 8 })),
    published: Type.Optional(Type.Boolean()),
    depositable: Type.Optional(Type.Boolean()),
    withdrawable: Type.Optional(Type.Boolean()),
    usd_rate: Type.Optional(Type.Union([Type.String({ maxLength: 64 }), Type.Null()])),
  },
  { additionalProperties: false },
);

export type AssetView = Static<typeof AssetSchema>;
export type AssetChangesBody = Static<typeof AssetChangesBody>;
export type CountryView = Static<typeof CountrySchema>;
export type AssetPairView = Static<typeof AssetPairSchema>;

export function assetView(a: Selectable<AssetsTable>): AssetView {
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
): AssetPairView {
  return {
    id: p.id,
    base_id: p.base_id,
    quote_id: p.quote_id,
    buy: decimalFromPg(p.buy),
    sell: decimalFromPg(p.sell),
    tradable: p.tradable,
  };
}
