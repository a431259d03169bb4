// Wire shapes of the ledger check the admin API answers (`GET /admin/ledger/check`): each
// difference between the recorded balances and the postings, and the report around them.

import { type Static, Type } from "typebox";

/**
 * One inconsistency: an account whose balance is not the sum of its postings (account_balance:
 * account_id, account, recorded, from_postings), an order whose postings of an asset do not sum to
 * zero (order_unbalanced: order_id, from_postings), or an asset whose balances do not
 * (asset_unbalanced: recorded). Sums are NUMERIC text as PostgreSQL writes it.
 */
export const LedgerDifferenceSchema = Type.Object(
  {
    kind: Type.Union([
      Type.Literal("account_balance"),
      Type.Literal("order_unbalanced"),
      Type.Literal("asset_unbalanced"),
    ]),
    account_id: Type.Optional(Type.Integer()),
    account: Type.Optional(Type.String()),
    order_id: Type.Optional(Type.Integer()),
    asset_id: Type.String(),
    recorded: Type.Optional(Type.String()),
    from_postings: Type.Optional(Type.String()),
  },
  { $id: "LedgerDifference" },
);

/** ok when there is no difference. */
export const LedgerReportSchema = Type.Object(
  { ok: Type.Boolean(), differences: Type.Array(LedgerDifferenceSchema) },
  { $id: "LedgerReport" },
);

export type LedgerDifference = Static<typeof LedgerDifferenceSchema>;
export type LedgerReport = Static<typeof LedgerReportSchema>;
