// The legs of an executed quote, as the service hands them to execute_quote(): client accounts by
// asset, then omnibus, fee revenue and VAT payable (post_legs' lock order), balanced per asset.

import assert from "node:assert/strict";
import { test } from "node:test";
import { houseSlot, type Leg, orderLegs } from "../ledger/index.ts";
import { tradeLegs } from "./trade-legs.ts";

const terms = {
  clientId: 35,
  baseId: "BTC",
  quoteId: "USD",
  baseAmount: 10_000_000n, // 0.1
  quoteAmount: 950_000_000_000n, // 9500
  fee: 9_500_000_000n, // 95
  vat: 475_000_000n, // 4.75
};

function sums(legs: Leg[]): Map<string, bigint> {
  const out = new Map<string, bigint>();
  for (const l of legs) out.set(l.assetId, (out.get(l.assetId) ?? 0n) + l.amount);
  return out;
}

test("a buy: the client pays the quote amount with fee and VAT and receives the base amount", () => {
  const { slot, legs } = tradeLegs({ ...terms, side: "buy" });
  assert.equal(slot, houseSlot(35));
  assert.deepEqual(legs, [
    { kind: "client", clientId: 35, assetId: "BTC", amount: 10_000_000n },
    { kind: "client", clientId: 35, assetId: "USD", amount: -959_975_000_000n },
    { kind: "omnibus", clientId: null, assetId: "BTC", amount: -10_000_000n },
    { kind: "omnibus", clientId: null, assetId: "USD", amount: 950_000_000_000n },
    { kind: "fee_revenue", clientId: null, assetId: "USD", amount: 9_500_000_000n },
    { kind: "vat_payable", clientId: null, assetId: "USD", amount: 475_000_000n },
  ]);
  assert.deepEqual([...sums(legs).values()], [0n, 0n]);
});

test("a sell: the client gives the base amount and receives the quote amount less fee and VAT", () => {
  const { legs } = tradeLegs({ ...terms, side: "sell" });
  assert.deepEqual(legs, [
    { kind: "client", clientId: 35, assetId: "BTC", amount: -10_000_000n },
    { kind: "client", clientId: 35, assetId: "USD", amount: 940_025_000_000n },
    { kind: "omnibus", clientId: null, assetId: "BTC", amount: 10_000_000n },
    { kind: "omnibus", clientId: null, assetId: "USD", amount: -950_000_000_000n },
    { kind: "fee_revenue", clientId: null, assetId: "USD", amount: 9_500_000_000n },
    { kind: "vat_payable", clientId: null, assetId: "USD", amount: 475_000_000n },
  ]);
  assert.deepEqual([...sums(legs).values()], [0n, 0n]);
});

test("no fee and no VAT: no legs for them; client legs still by asset when the quote asset sorts first", () => {
  const { slot, legs } = tradeLegs({
    ...terms,
    baseId: "USDT",
    quoteId: "AED",
    fee: 0n,
    vat: 0n,
    side: "buy",
  });
  assert.deepEqual(
    legs.map((l) => [l.kind, l.assetId]),
    [
      ["client", "AED"],
      ["client", "USDT"],
      ["omnibus", "AED"],
      ["omnibus", "USDT"],
    ],
  );
  assert.deepEqual(orderLegs(legs, slot), legs, "already in lock order");
});
