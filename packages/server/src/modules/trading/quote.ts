// Pure pricing (docs/decisions.md, "Trading"): no I/O, every rounding names its direction, always against the
// client. Amounts are bigints at scale 8; computed amounts are rounded to the quote asset's
// decimal places before anything else uses them.

import { mul, mulDiv, ONE, roundToPlaces } from "@counterpart/protocol";

export type Side = "buy" | "sell";

export interface PricingInput {
  side: Side;
  baseAmount: bigint;
  /** the pair's buy and sell prices */
  buyPrice: bigint;
  sellPrice: bigint;
  quoteDecimals: number;
  /** fee as a fraction, at scale 8 (0.005 = 500000n) */
  feeRate: bigint;
  /** VAT on the fee as a percentage at scale 8 (5% = 500000000n); null: no VAT */
  vatPercentage: bigint | null;
}

export interface Priced {
  side: Side;
  price: bigint;
  baseAmount: bigint;
  quoteAmount: bigint;
  fee: bigint;
  vat: bigint;
  vatPercentage: bigint | null;
}

export function priceQuote(input: PricingInput): Priced {
  if (input.baseAmount <= 0n) throw new RangeError("base amount must be positive");
  const buying = input.side === "buy";
  const price = buying ? input.buyPrice : input.sellPrice;
  // The client pays the quote amount when buying (round up) and receives it when selling (down).
  const direction = buying ? "up" : "down";
  const quoteAmount = roundToPlaces(mul(input.baseAmount, price, direction), input.quoteDecimals, direction);
  // Fee and VAT are always paid by the client: rounded up.
  const fee = roundToPlaces(mul(quoteAmount, input.feeRate, "up"), input.quoteDecimals, "up");
  const vat =
    input.vatPercentage === null
      ? 0n
      : roundToPlaces(mulDiv(fee, input.vatPercentage, 100n * ONE, "up"), input.quoteDecimals, "up");
  return {
    side: input.side,
    price,
    baseAmount: input.baseAmount,
    quoteAmount,
    fee,
    vat,
    vatPercentage: input.vatPercentage,
  };
}

/** An amount finer than an asset's decimal places (0.0000001 of a 6-decimal asset). */
export function finerThanAsset(amount: bigint, decimalPlaces: number): boolean {
  return amount % 10n ** BigInt(8 - decimalPlaces) !== 0n;
}

/** What the client must hold to place the order: quote asset when buying, base asset when selling. */
export function requiredFunds(p: Priced): { asset: "base" | "quote"; amount: bigint } {
  return p.side === "buy"
    ? { asset: "quote", amount: p.quoteAmount + p.fee + p.vat }
    : { asset: "base", amount: p.baseAmount };
}
