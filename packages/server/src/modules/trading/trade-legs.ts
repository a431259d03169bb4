// The legs of an executed quote, in the order post_legs() locks them (docs/architecture.md,
// "Money"): the client's two accounts against the partner's omnibus accounts, and the fee and VAT
// to the partner's revenue and VAT accounts, all in the quote asset.

import { houseSlot, type Leg, orderLegs } from "../ledger/index.ts";
import type { Side } from "./quote.ts";

export interface TradeTerms {
  clientId: number;
  side: Side;
  baseId: string;
  quoteId: string;
  /** At scale 8, all > 0 except fee and VAT, which may be 0. */
  baseAmount: bigint;
  quoteAmount: bigint;
  fee: bigint;
  vat: bigint;
}

/**
 * The house slot and the legs, in lock order, of a trade. A buy takes the quote amount plus fee
 * and VAT from the client and gives it the base amount; a sell takes the base amount and gives it
 * the quote amount less fee and VAT.
 */
export function tradeLegs(t: TradeTerms): { slot: number; legs: Leg[] } {
  const sign = t.side === "buy" ? 1n : -1n;
  const clientQuote = t.side === "buy" ? -(t.quoteAmount + t.fee + t.vat) : t.quoteAmount - t.fee - t.vat;
  const legs: Leg[] = [
    { kind: "client", clientId: t.clientId, assetId: t.baseId, amount: sign * t.baseAmount },
    { kind: "client", clientId: t.clientId, assetId: t.quoteId, amount: clientQuote },
    { kind: "omnibus", clientId: null, assetId: t.baseId, amount: -sign * t.baseAmount },
    { kind: "omnibus", clientId: null, assetId: t.quoteId, amount: sign * t.quoteAmount },
  ];
  if (t.fee > 0n) legs.push({ kind: "fee_revenue", clientId: null, assetId: t.quoteId, amount: t.fee });
  if (t.vat > 0n) legs.push({ kind: "vat_payable", clientId: null, assetId: t.quoteId, amount: t.vat });
  const slot = houseSlot(t.clientId);
  return { slot, legs: orderLegs(legs, slot) };
}
