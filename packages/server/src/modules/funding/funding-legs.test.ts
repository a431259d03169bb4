// The legs of a deposit and a withdrawal, as the service hands them to fund_order(): the client's
// account against the omnibus account of its house slot, client first (post_legs' lock order).

import assert from "node:assert/strict";
import { test } from "node:test";
import { houseSlot, orderLegs } from "../ledger/index.ts";
import { fundingLegs } from "./funding-legs.ts";

test("a deposit credits the client and debits the omnibus account of its slot, client first", () => {
  assert.deepEqual(fundingLegs("deposit", 21, "EUR", 150_000_000n), {
    slot: houseSlot(21),
    legs: [
      { kind: "client", clientId: 21, assetId: "EUR", amount: 150_000_000n },
      { kind: "omnibus", clientId: null, assetId: "EUR", amount: -150_000_000n },
    ],
  });
});

test("a withdrawal is the deposit's mirror, in the same order", () => {
  const { slot, legs } = fundingLegs("withdrawal", 5, "AED", 1n);
  assert.equal(slot, 5);
  assert.deepEqual(legs, [
    { kind: "client", clientId: 5, assetId: "AED", amount: -1n },
    { kind: "omnibus", clientId: null, assetId: "AED", amount: 1n },
  ]);
  assert.deepEqual(orderLegs(legs, slot), legs, "already in lock order");
});

test("an amount that is not positive is a programming error", () => {
  assert.throws(() => fundingLegs("deposit", 1, "EUR", 0n), /positive/);
  assert.throws(() => fundingLegs("withdrawal", 1, "EUR", -5n), /positive/);
});
