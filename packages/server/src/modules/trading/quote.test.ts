// Table-driven tests of the pure pricing function: prices, rounding against the client, fee and VAT.

import assert from "node:assert/strict";
import { test } from "node:test";
import { formatDecimal, parseDecimal } from "@counterpart/protocol";
import { type PricingInput, priceQuote, requiredFunds } from "./quote.ts";

const d = (s: string) => {
  const v = parseDecimal(s);
  if (v === null) throw new Error(s);
  return v;
};

interface Row {
  name: string;
  input: Partial<PricingInput> & { side: "buy" | "sell"; baseAmount: bigint };
  price: string;
  quote: string;
  fee: string;
  vat: string;
}

const base: Omit<PricingInput, "side" | "baseAmount"> = {
  buyPrice: d("349250.00"),
  sellPrice: d("348550.00"),
  quoteDecimals: 2,
  feeRate: d("0.005"),
  vatPercentage: d("5"),
};

const rows: Row[] = [
  {
    name: "buy 0.01 BTC at 349250: exact, fee 0.5%, VAT 5% of the fee",
    input: { side: "buy", baseAmount: d("0.01") },
    price: "349250.00000000",
    quote: "3492.50000000",
    fee: "17.47000000", // 17.4625 rounded up to cents
    vat: "0.88000000", // 0.8735 rounded up
  },
  {
    name: "sell 0.01 BTC at the sell price; the client receives, so the quote amount rounds down",
    input: { side: "sell", baseAmount: d("0.01") },
    price: "348550.00000000",
    quote: "3485.50000000",
    fee: "17.43000000", // 17.4275 up
    vat: "0.88000000", // 0.8715 up
  },
  {
    name: "buy: a fractional quote amount rounds up to the quote asset's decimals",
    input: { side: "buy", baseAmount: d("0.00012345") },
    price: "349250.00000000",
    quote: "43.12000000", // 43.1149125 → 43.12
    fee: "0.22000000", // 0.2156 → 0.22
    vat: "0.02000000", // 0.011 → 0.02
  },
  {
    name: "sell: the same amount rounds down",
    input: { side: "sell", baseAmount: d("0.00012345") },
    price: "348550.00000000",
    quote: "43.02000000", // 43.0284975 → 43.02
    fee: "0.22000000", // 0.2151 → 0.22
    vat: "0.02000000",
  },
  {
    name: "no VAT configured: vat 0",
    input: { side: "buy", baseAmount: d("1"), vatPercentage: null },
    price: "349250.00000000",
    quote: "349250.00000000",
    fee: "1746.25000000",
    vat: "0E-8",
  },
  {
    name: "zero fee rate: no fee and no VAT",
    input: { side: "buy", baseAmount: d("2"), feeRate: 0n },
    price: "349250.00000000",
    quote: "698500.00000000",
    fee: "0E-8",
    vat: "0E-8",
  },
  {
    name: "a quote asset with 6 decimals (USDT as quote)",
    input: { side: "buy", baseAmount: d("0.333"), buyPrice: d("1.0020"), quoteDecimals: 6 },
    price: "1.00200000",
    quote: "0.33366600",
    fee: "0.00166900", // 0.00166833 → 0.001669
    vat: "0.00008400", // 0.00008345 → 0.000084
  },
  {
    name: "a quote asset with 8 decimals: rounding at the wire scale",
    input: { side: "sell", baseAmount: d("0.00000001"), sellPrice: d("0.5"), quoteDecimals: 8 },
    price: "0.50000000",
    quote: "0E-8", // 0.000000005 down → 0
    fee: "0E-8",
    vat: "0E-8",
  },
];

for (const row of rows) {
  test(row.name, () => {
    const p = priceQuote({ ...base, ...row.input });
    assert.equal(formatDecimal(p.price), row.price);
    assert.equal(formatDecimal(p.quoteAmount), row.quote);
    assert.equal(formatDecimal(p.fee), row.fee);
    assert.equal(formatDecimal(p.vat), row.vat);
  });
}

test("required funds: quote + fee + VAT when buying, the base amount when selling", () => {
  const buy = priceQuote({ ...base, side: "buy", baseAmount: d("0.01") });
  assert.deepEqual(requiredFunds(buy), { asset: "quote", amount: d("3510.85") });
  const sell = priceQuote({ ...base, side: "sell", baseAmount: d("0.01") });
  assert.deepEqual(requiredFunds(sell), { asset: "base", amount: d("0.01") });
});

test("a non-positive base amount is a programming error", () => {
  assert.throws(() => priceQuote({ ...base, side: "buy", baseAmount: 0n }), RangeError);
});
