// The quote as partners see it, and its schema.

import { formatDecimal, formatDecimalAtScale } from "@counterpart/protocol";
import { type Static, Type } from "typebox";
import type { Priced } from "./quote.ts";

export const QuoteSchema = Type.Object(
  {
    market_price: Type.String(),
    base_amount: Type.String(),
    quote_amount: Type.String(),
    fee_amount: Type.String(),
    vat_percentage: Type.Union([Type.String(), Type.Null()]),
    vat_amount: Type.String(),
    lifetime: Type.Integer({ description: "Seconds the token stays valid." }),
    token: Type.Union([Type.String(), Type.Null()], {
      description: "What POST /v1/partner/quotes/execute takes; null inside error details.",
    }),
  },
  { $id: "Quote" },
);

export type QuoteView = Static<typeof QuoteSchema>;

/** A percentage as stored (NUMERIC(7,4)), written at its own scale. */
export function percentageText(stored: string | null): string | null {
  if (stored === null) return null;
  const [whole = "0", frac = ""] = stored.split(".");
  return formatDecimalAtScale(BigInt(whole + frac), frac.length);
}

export function quoteView(
  p: Priced,
  vatPercentageStored: string | null,
  lifetime: number,
  token: string | null,
): QuoteView {
  return {
    market_price: formatDecimal(p.price),
    base_amount: formatDecimal(p.baseAmount),
    quote_amount: formatDecimal(p.quoteAmount),
    fee_amount: formatDecimal(p.fee),
    vat_percentage: percentageText(vatPercentageStored),
    vat_amount: formatDecimal(p.vat),
    lifetime,
    token,
  };
}
