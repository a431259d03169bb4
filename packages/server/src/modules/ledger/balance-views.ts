// A client's balance of one asset as partners see it, and its schema: one definition for
// serialisation and the OpenAPI document.

import { type Static, Type } from "typebox";

export const BalanceSchema = Type.Object(
  {
    asset_id: Type.String(),
    balance: Type.String(),
    available_balance: Type.String({ description: "What trading and withdrawals can use." }),
    balance_usd: Type.String(),
    available_balance_usd: Type.String(),
  },
  { $id: "Balance" },
);

export type BalanceView = Static<typeof BalanceSchema>;
