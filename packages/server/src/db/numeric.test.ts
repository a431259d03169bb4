// NUMERIC text and money (db/numeric.ts): a stored amount passed on to the wire as its text when
// that is already the wire's form, and otherwise through a bigint, with the same result either way.

import assert from "node:assert/strict";
import { test } from "node:test";
import { formatDecimal } from "@counterpart/protocol";
import fc from "fast-check";
import { decimalFromPg, moneyFromPg, moneyToPg } from "./numeric.ts";

const throughBigint = (text: string) => formatDecimal(moneyFromPg(text));

test("decimalFromPg writes every NUMERIC(p,8) text as formatDecimal writes its amount", () => {
  const amounts = fc.oneof(
    fc.bigInt({ min: -(10n ** 28n), max: 10n ** 28n }),
    // Near zero, where the wire switches to an exponent.
    fc.bigInt({ min: -10_000n, max: 10_000n }),
    fc.integer({ min: 0, max: 27 }).map((e) => 10n ** BigInt(e)),
  );
  fc.assert(
    fc.property(amounts, (v) => {
      assert.equal(decimalFromPg(moneyToPg(v)), formatDecimal(v));
    }),
    { numRuns: 20_000 },
  );
});

test("decimalFromPg: the edges of the plain form, and texts of fewer decimals", () => {
  for (const [text, wire] of [
    ["349250.00000000", "349250.00000000"],
    ["0.00000100", "0.00000100"],
    ["-0.00000100", "-0.00000100"],
    ["0.00000010", "1.0E-7"],
    ["0.00000001", "1E-8"],
    ["0.00000000", "0E-8"],
    ["1.00000000", "1.00000000"],
    ["1.5", "1.50000000"],
    ["12", "12.00000000"],
  ] as const) {
    assert.equal(decimalFromPg(text), wire, text);
    assert.equal(decimalFromPg(text), throughBigint(text), text);
  }
  // What moneyFromPg refuses, decimalFromPg refuses too, never passing it on.
  for (const text of ["", "1e5", "1.000000000", "01.00000000x", "NaN"]) {
    assert.throws(() => decimalFromPg(text), /unexpected NUMERIC text/, text);
  }
});
