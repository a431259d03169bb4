// Amounts in every wire form parse exactly into Money and format back.

import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { fromMoney, MONEY_ONE, toMoney } from "./index.ts";

describe("toMoney / fromMoney", () => {
  test("the service's forms: zero with an exponent, tiny values, trailing zeros", () => {
    const cases: [string, bigint][] = [
      ["0E-8", 0n],
      ["1.0E-7", 10n],
      ["1E-8", 1n],
      ["100.50000000", 10_050_000_000n],
      ["100.5", 10_050_000_000n],
      ["100", 10_000_000_000n],
      ["1.5E+3", 150_000_000_000n],
      ["2.5e2", 25_000_000_000n],
      ["0.00000001", 1n],
      ["-3.25", -325_000_000n],
      ["250000.00000000", 25_000_000_000_000n],
      ["1.000000000000", MONEY_ONE],
    ];
    for (const [wire, money] of cases) assert.equal(toMoney(wire), money, wire);
  });

  test("back to the wire form the service writes, and to plain notation for display", () => {
    assert.equal(fromMoney(0n), "0E-8");
    assert.equal(fromMoney(10n), "1.0E-7");
    assert.equal(fromMoney(10_050_000_000n), "100.50000000");
    assert.equal(fromMoney(0n, { notation: "plain" }), "0.00000000");
    assert.equal(fromMoney(10n, { notation: "plain" }), "0.00000010");
    assert.equal(fromMoney(-325_000_000n, { notation: "plain" }), "-3.25000000");
    assert.equal(fromMoney(12_345_678_901_234_567_890n, { notation: "plain" }), "123456789012.34567890");
    for (const wire of ["0E-8", "1.0E-7", "100.50000000", "123.45678901"]) {
      assert.equal(fromMoney(toMoney(wire)), wire);
    }
  });

  test("arithmetic is exact where floats are not", () => {
    assert.equal(fromMoney(toMoney("0.1") + toMoney("0.2"), { notation: "plain" }), "0.30000000");
  });

  test("anything that is not an exact decimal of at most 8 places is refused, never rounded", () => {
    for (const bad of ["0.000000001", "1e-9", "abc", "", "1,5", "NaN", "Infinity", "0x10", "1e31", " 1"]) {
      assert.throws(() => toMoney(bad), RangeError, bad);
    }
    assert.throws(() => toMoney(1.5 as unknown as string), /never as numbers/);
    assert.throws(() => fromMoney(1 as unknown as bigint), TypeError);
  });
});
