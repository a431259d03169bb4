// Wire shapes of the admin API's trading routes: a pair with its settings, one partner's settings
// for a pair, a partner's default fee rate and VAT percentage, and the bodies that change them.
// Decimals travel as text (NUMERIC as stored, scale 8 for money and rates); the routes check the
// text and parse it.

import { type Static, Type } from "typebox";
import { ReasonText } from "../../platform/wire-schemas.ts";

const DecimalText = Type.String({ minLength: 1, maxLength: 64 });
const NullableDecimalText = Type.Union([DecimalText, Type.Null()]);

/** A pair as the operator sees it: the stored row, prices and bounds as NUMERIC text. */
export const AdminPairSchema = Type.Object(
  {
    id: Type.String(),
    base_id: Type.String(),
    quote_id: Type.String(),
    buy: Type.String(),
    sell: Type.String(),
    tradable: Type.Boolean(),
    min_volume: Type.String(),
    max_volume: Type.String(),
    lifetime_s: Type.Integer(),
    fee_rate: Type.String(),
    price_at: Type.String(),
    /** true while prices set by hand hold the pair; false when the feed drives it */
    price_pinned: Type.Boolean(),
  },
  { $id: "AdminPair" },
);

/** One partner's settings for one pair; a null fee rate falls back to its default, then the pair's. */
export const AdminPartnerPairSchema = Type.Object(
  {
    partner_id: Type.String(),
    pair_id: Type.String(),
    available: Type.Boolean(),
    fee_rate: Type.Union([Type.String(), Type.Null()]),
  },
  { $id: "AdminPartnerPair" },
);

/** A partner's default fee rate and VAT percentage, as stored. */
export const AdminPartnerFeesSchema = Type.Object(
  {
    fee_rate: Type.Union([Type.String(), Type.Null()]),
    vat_percentage: Type.Union([Type.String(), Type.Null()]),
  },
  { $id: "AdminPartnerFees" },
);

/** What `PUT /admin/pairs/:pair_id` may change; a new pair takes defaults for the rest. */
export const PairChangesBody = Type.Object(
  {
    tradable: Type.Optional(Type.Boolean()),
    min_volume: Type.Optional(DecimalText),
    max_volume: Type.Optional(DecimalText),
    lifetime_s: Type.Optional(Type.Integer({ minimum: 1, maximum: 3600 })),
    fee_rate: Type.Optional(DecimalText),
  },
  { additionalProperties: false },
);

/** `PUT /admin/pairs/:pair_id/price`: prices by hand, which pin the pair; `at` defaults to now. */
export const PairPriceBody = Type.Object(
  {
    buy: DecimalText,
    sell: DecimalText,
    at: Type.Optional(Type.String({ format: "date-time" })),
    /** Required: a pin is on the audit trail with its reason. */
    reason: ReasonText,
  },
  { additionalProperties: false },
);

/** `PUT /admin/partners/:partner_id/pairs/:pair_id`; a null fee rate clears the partner's own. */
export const PartnerPairChangesBody = Type.Object(
  { available: Type.Optional(Type.Boolean()), fee_rate: Type.Optional(NullableDecimalText) },
  { additionalProperties: false },
);

/** `PUT /admin/partners/:partner_id/fees`; null clears either. */
export const PartnerFeesChangesBody = Type.Object(
  {
    fee_rate: Type.Optional(NullableDecimalText),
    vat_percentage: Type.Optional(NullableDecimalText),
  },
  { additionalProperties: false },
);

export type AdminPairView = Static<typeof AdminPairSchema>;
export type AdminPartnerPairView = Static<typeof AdminPartnerPairSchema>;
export type AdminPartnerFeesView = Static<typeof AdminPartnerFeesSchema>;
export type PairChangesBody = Static<typeof PairChangesBody>;
export type PairPriceBody = Static<typeof PairPriceBody>;
export type PartnerPairChangesBody = Static<typeof PartnerPairChangesBody>;
export type PartnerFeesChangesBody = Static<typeof PartnerFeesChangesBody>;
