// The quote as partners see it (spec §2.7), and its schema.

import { formatDecimal, formatDecimalAtScale } from "@counterpart/protocol";
import { Type } from "typebox";
import type { Priced } from "./quote.ts";

export const QuoteSchema = Type.Object({
  market_price: Type.String(),
  base_amount: Type.String(),
  quote_amount: Type.String(),
  fee_amount: Type.String(),
  vat_percentage: Type.Union([Type.String(), Type.Null()]),
  vat_amount: Type.String(),
  lifetime: Type.Integer({ description: "seconds" }),
  token: Type.Union([Type.String(), Type.Null()]),
});

export interface QuoteView {
  market_price: string;
  base_amount: string;
  quote_amount: string;
  fee_amount: string;
  vat_percentage: string | null;
  vat_amount: string;
  lifetime: number;
  token: string | null;
}

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
