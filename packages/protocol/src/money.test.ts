import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { describe, test } from "node:test";
import fc from "fast-check";
import {
  formatDecimal,
  formatDecimalAtScale,
  mul,
  mulDiv,
  ONE,
  type ParseResult,
  parseAmount,
  parseDecimal,
  type Rounding,
  roundToPlaces,
  SCALE,
} from "./money.ts";

// Python's decimal module is the reference the wire format must match, so the
// oracle tests batch every generated value into one python3 process per run.
const HAVE_PYTHON = spawnSync("python3", ["-c", "import decimal"], { timeout: 10_000 }).status === 0;
const PYTHON_SKIP = HAVE_PYTHON ? false : "python3 is not available";
// Shrinking would re-run python3 for every candidate; the mismatch list in
// each assertion already names the failing values, so stop at the first.
const PYTHON_RUNS = { numRuns: 2, endOnFailure: true };

function runPython(script: string, input: unknown): unknown {
  const result = spawnSync("python3", ["-c", script], {
    input: JSON.stringify(input),
    encoding: "utf8",
    timeout: 30_000,
  });
  if (result.error) throw result.error;
  assert.equal(result.status, 0, result.stderr);
  return JSON.parse(result.stdout);
}

// Built from text rather than Decimal(v).scaleb(): scaleb rounds to the
// context's 28 digits, while the string constructor is always exact.
const PY_FORMAT = `
import json, sys
from decimal import Decimal
pairs = json.load(sys.stdin)
print(json.dumps([str(Decimal(v + "E" + str(-s))) for v, s in pairs]))
`;

// Answers, per string: "invalid", "places" (more than 8 places once trailing
// zeros go), or the exact value at scale 8 as a decimal integer string.
const PY_PARSE = `
import json, sys
from decimal import Context, Decimal, InvalidOperation
ctx = Context(prec=1000)
out = []
for s in json.load(sys.stdin):
    try:
        d = Decimal(s)
    except InvalidOperation:
        out.append("invalid")
        continue
    if not d.is_finite():
        out.append("invalid")
        continue
    places = 0 if d.is_zero() else max(0, -ctx.normalize(d).as_tuple().exponent)
    out.append("places" if places > 8 else str(int(ctx.scaleb(d, 8))))
print(json.dumps(out))
`;

const PARSING: ParseResult = { ok: false, type: "decimal_parsing", msg: "Input should be a valid decimal" };
const STRING_TYPE: ParseResult = { ok: false, type: "string_type", msg: "Input should be a valid string" };
const GREATER_THAN: ParseResult = { ok: false, type: "greater_than", msg: "Input should be greater than 0" };
const MAX_PLACES: ParseResult = {
  ok: false,
  type: "decimal_max_places",
  msg: "Decimal input should have no more than 8 decimal places",
};
const ok = (value: bigint): ParseResult => ({ ok: true, value });

/** Bigints spread over magnitudes, so short and long coefficients both show up. */
function bigIntUpToDigits(maxDigits: number, min: bigint): fc.Arbitrary<bigint> {
  return fc.integer({ min: 1, max: maxDigits }).chain((n) => fc.bigInt({ min, max: 10n ** BigInt(n) - 1n }));
}

const signedUpToDigits = (maxDigits: number): fc.Arbitrary<bigint> =>
  fc.tuple(fc.boolean(), bigIntUpToDigits(maxDigits, 0n)).map(([neg, v]) => (neg ? -v : v));

// Zeros are over-weighted so trailing-zero normalisation is exercised.
const digit = fc.oneof(
  { arbitrary: fc.constant("0"), weight: 3 },
  { arbitrary: fc.constantFrom("1", "2", "3", "4", "5", "6", "7", "8", "9"), weight: 7 },
);
const digits = (minLength: number, maxLength: number): fc.Arbitrary<string> =>
  // size "max" because the default caps lengths near 10, hiding long fractions.
  fc.string({ unit: digit, minLength, maxLength, size: "max" });

/** Strings in the accepted grammar and within its bounds (<= 40 significant digits, |exp| <= 30). */
const grammarString: fc.Arbitrary<string> = fc
  .record({
    negative: fc.boolean(),
    leadingZeros: fc.integer({ min: 0, max: 3 }),
    intPart: digits(1, 20),
    fraction: fc.option(digits(1, 15), { nil: undefined }),
  })
  .chain((mantissa) => {
    const fractionLength = mantissa.fraction?.length ?? 0;
    // Uniform exponents rarely bring a long fraction back within 8 places,
    // so half of them aim at that boundary for the fraction just drawn.
    const nearBoundary = fc
      .integer({ min: -3, max: 3 })
      .map((delta) => Math.max(-30, Math.min(30, fractionLength - SCALE + delta)));
    const exponent = fc.option(
      fc.record({
        marker: fc.constantFrom("e", "E"),
        plus: fc.boolean(),
        zeros: fc.integer({ min: 0, max: 2 }),
        value: fc.oneof(fc.integer({ min: -30, max: 30 }), nearBoundary),
      }),
      { nil: undefined },
    );
    return exponent.map((exp) => ({ ...mantissa, exponent: exp }));
  })
  .map(({ negative, leadingZeros, intPart, fraction, exponent }) => {
    let s = `${negative ? "-" : ""}${"0".repeat(leadingZeros)}${intPart}`;
    if (fraction !== undefined) s += `.${fraction}`;
    if (exponent !== undefined) {
      const sign = exponent.value < 0 ? "-" : exponent.plus ? "+" : "";
      s += `${exponent.marker}${sign}${"0".repeat(exponent.zeros)}${Math.abs(exponent.value)}`;
    }
    return s;
  });

describe("parseAmount", () => {
  test("accepts the strict grammar", () => {
    const cases: [string, bigint][] = [
      ["1", ONE],
      ["1.5", 150000000n],
      ["100.5", 10050000000n],
      ["0.00000001", 1n],
      ["00012.50", 1250000000n],
      ["1.000000000000", ONE],
      ["1E-8", 1n],
      ["1e-8", 1n],
      ["1.5E+3", 150000000000n],
      ["1.5e3", 150000000000n],
      ["1E-0", ONE],
      ["1e+030", 10n ** 38n],
      ["1e30", 10n ** 38n],
      ["123456789.12345678", 12345678912345678n],
      ["12345678900E-10", 123456789n],
      ["0.123456780000", 12345678n],
    ];
    for (const [input, value] of cases) {
      assert.deepEqual(parseAmount(input), ok(value), input);
    }
  });

  test("refuses anything that is not a string", () => {
    for (const input of [1, 1.5, 0, Number.NaN, 1n, true, null, undefined, {}, ["1"], new String("1")]) {
      assert.deepEqual(parseAmount(input), STRING_TYPE, String(input));
    }
  });

  test("refuses text outside the grammar", () => {
    const cases = [
      "",
      " ",
      "-",
      "+",
      ".",
      "+1",
      "+1.5",
      ".5",
      "-.5",
      "5.",
      "5.e3",
      "1e",
      "1e+",
      "1e-",
      "e5",
      " 1",
      "1 ",
      "1 000",
      "1_000",
      "1,5",
      "0x10",
      "0b1",
      "1n",
      "NaN",
      "nan",
      "Infinity",
      "-Infinity",
      "inf",
      "1..5",
      "1.5.5",
      "--1",
      "-+1",
      "1e5.5",
      "1E5E5",
      "１",
      "١",
      "1\n",
      "\t1",
    ];
    for (const input of cases) {
      assert.deepEqual(parseAmount(input), PARSING, JSON.stringify(input));
    }
  });

  test("bounds the exponent to ±30 and the mantissa to 40 significant digits", () => {
    assert.deepEqual(parseAmount("1e31"), PARSING);
    assert.deepEqual(parseAmount("1e-31"), PARSING);
    assert.deepEqual(parseAmount("1e0000031"), PARSING);
    assert.deepEqual(parseAmount(`1e${"9".repeat(400)}`), PARSING);
    assert.deepEqual(parseAmount("1e-30"), MAX_PLACES);

    const forty = "1234567890".repeat(4);
    assert.deepEqual(parseAmount(forty), ok(BigInt(forty) * ONE));
    assert.deepEqual(parseAmount(`${forty}1`), PARSING);
    assert.deepEqual(parseAmount(`1${"0".repeat(40)}`), PARSING, "trailing zeros are significant");
    assert.deepEqual(parseAmount(`1.${"0".repeat(40)}`), PARSING);
    assert.deepEqual(parseAmount(`1.${"0".repeat(39)}`), ok(ONE));
    assert.deepEqual(
      parseAmount(`${"0".repeat(100)}${forty}`),
      ok(BigInt(forty) * ONE),
      "leading zeros are not",
    );
    assert.deepEqual(parseAmount(`0.${"0".repeat(100)}1`), MAX_PLACES);
    assert.deepEqual(parseAmount(`${"9".repeat(40)}e30`), ok(BigInt("9".repeat(40)) * 10n ** 38n));
  });

  test("requires a value greater than zero", () => {
    for (const input of [
      "0",
      "0.0",
      "00",
      "0E-8",
      "0e-30",
      "0e30",
      "-0",
      "-0.00000000",
      "-1",
      "-0.00000001",
      "-1e30",
    ]) {
      assert.deepEqual(parseAmount(input), GREATER_THAN, input);
    }
    // Zero has no decimal places however it is written, so it is a sign error.
    assert.deepEqual(parseAmount("0.0000000000000"), GREATER_THAN);
  });

  test("allows at most 8 decimal places once trailing zeros are removed", () => {
    for (const input of ["1E-9", "1.123456789", "0.000000001", "1.0000000001", "12345E-13", "0.000000015"]) {
      assert.deepEqual(parseAmount(input), MAX_PLACES, input);
    }
    assert.deepEqual(parseAmount("1.123456780"), ok(112345678n));
    assert.deepEqual(parseAmount("10E-9"), ok(1n));
    assert.deepEqual(parseAmount("12300E-10"), ok(123n));
  });

  test("checks decimal places before the sign, as pydantic does", () => {
    assert.deepEqual(parseAmount("-1.123456789"), MAX_PLACES);
    assert.deepEqual(parseAmount("-1E-9"), MAX_PLACES);
  });

  test("returns a fresh result object each call", () => {
    const first = parseAmount("x");
    assert.notEqual(first, parseAmount("x"));
  });

  // How fast hostile inputs are refused is measured by `BENCH_ONLY=parse npm run bench`, not here.
  test("hostile inputs end in the right verdict", () => {
    assert.deepEqual(parseAmount("1e30"), ok(10n ** 38n));
    assert.deepEqual(parseAmount("1e31"), PARSING);
    assert.deepEqual(parseAmount(`${"9".repeat(41)}`), PARSING);
    assert.deepEqual(parseAmount(`${"0".repeat(1_000_000)}1`), ok(ONE));
    assert.deepEqual(parseAmount("1".repeat(1_000_000)), PARSING);
    assert.deepEqual(parseAmount(`1e${"0".repeat(1_000_000)}5`), ok(10n ** 13n));
    assert.deepEqual(parseAmount(`1.${"1".repeat(1_000_000)}x`), PARSING);
  });

  test("round-trips formatDecimal for every positive amount within 40 digits", () => {
    fc.assert(
      fc.property(bigIntUpToDigits(40, 1n), (x) => {
        assert.deepEqual(parseAmount(formatDecimal(x)), ok(x));
      }),
      { numRuns: 2000 },
    );
  });

  test("rejects every amount with more than 8 places", () => {
    const plainTooPrecise = fc
      .tuple(digits(1, 15), digits(8, 24), fc.constantFrom("1", "2", "3", "4", "5", "6", "7", "8", "9"))
      .map(([int, frac, last]) => `${int}.${frac}${last}`);
    // A coefficient with no trailing zero keeps every one of its places.
    const scientificTooPrecise = fc
      .tuple(
        bigIntUpToDigits(40, 1n).filter((c) => c % 10n !== 0n),
        fc.integer({ min: 9, max: 30 }),
      )
      .map(([coefficient, places]) => `${coefficient}E-${places}`);
    fc.assert(
      fc.property(fc.oneof(plainTooPrecise, scientificTooPrecise), (input) => {
        assert.deepEqual(parseAmount(input), MAX_PLACES, input);
        assert.equal(parseDecimal(input), null, input);
      }),
      { numRuns: 1000 },
    );
  });

  test("agrees with Python's decimal on generated grammar strings", { skip: PYTHON_SKIP }, () => {
    fc.assert(
      fc.property(fc.array(grammarString, { minLength: 300, maxLength: 300 }), (inputs) => {
        const expected = runPython(PY_PARSE, inputs) as string[];
        const mismatches = inputs.flatMap((input, i) => {
          const py = expected[i];
          assert.ok(py !== undefined && py !== "invalid", `python refused ${input}`);
          const wantAmount = py === "places" ? MAX_PLACES : BigInt(py) > 0n ? ok(BigInt(py)) : GREATER_THAN;
          const wantDecimal = py === "places" ? null : BigInt(py);
          const gotAmount = parseAmount(input);
          const gotDecimal = parseDecimal(input);
          const same =
            JSON.stringify(gotAmount, bigintReplacer) === JSON.stringify(wantAmount, bigintReplacer) &&
            gotDecimal === wantDecimal;
          return same ? [] : [{ input, python: py }];
        });
        assert.deepEqual(mismatches, []);
      }),
      PYTHON_RUNS,
    );
  });
});

function bigintReplacer(_key: string, value: unknown): unknown {
  return typeof value === "bigint" ? `${value}n` : value;
}

describe("parseDecimal", () => {
  test("allows zero and negatives but never rounds", () => {
    const cases: [string, bigint | null][] = [
      ["0", 0n],
      ["-0", 0n],
      ["0E-8", 0n],
      ["-1.5", -150000000n],
      ["-0.00000001", -1n],
      ["-1e30", -(10n ** 38n)],
      ["12.34", 1234000000n],
      ["1.000000000000", ONE],
      ["1.123456789", null],
      ["-1E-9", null],
      ["1.5e-7", 15n],
      ["+1", null],
      [".5", null],
      ["5.", null],
      ["1e31", null],
      ["", null],
      ["NaN", null],
    ];
    for (const [input, value] of cases) {
      assert.equal(parseDecimal(input), value, input);
    }
  });

  test("refuses a number smuggled past the type system", () => {
    assert.equal(parseDecimal(1 as unknown as string), null);
    assert.equal(parseDecimal(null as unknown as string), null);
  });

  test("round-trips formatDecimal, sign included", () => {
    fc.assert(
      fc.property(signedUpToDigits(40), (x) => {
        assert.equal(parseDecimal(formatDecimal(x)), x);
      }),
      { numRuns: 2000 },
    );
  });

  test("only accepts strings Python reads as the same value", { skip: PYTHON_SKIP }, () => {
    // Junk-heavy strings: whatever we accept must be a number Python agrees on.
    const junk = fc.string({ unit: fc.constantFrom(..."0123456789.-+eE _x"), maxLength: 10 });
    fc.assert(
      fc.property(fc.array(junk, { minLength: 300, maxLength: 300 }), (inputs) => {
        const accepted = inputs.filter((input) => parseDecimal(input) !== null);
        const expected = runPython(PY_PARSE, accepted) as string[];
        const mismatches = accepted.filter((input, i) => expected[i] !== String(parseDecimal(input)));
        assert.deepEqual(mismatches, []);
      }),
      PYTHON_RUNS,
    );
  });
});

describe("formatDecimal", () => {
  // Expected strings were produced by python3: str(Decimal(f"{v}E-8")).
  const table: [bigint, string][] = [
    [0n, "0E-8"],
    [1n, "1E-8"],
    [10n, "1.0E-7"],
    [99n, "9.9E-7"],
    [100n, "0.00000100"],
    [123n, "0.00000123"],
    [1000n, "0.00001000"],
    [50000000n, "0.50000000"],
    [ONE, "1.00000000"],
    [150000000n, "1.50000000"],
    [10050000000n, "100.50000000"],
    [-1n, "-1E-8"],
    [-10n, "-1.0E-7"],
    [-150000000n, "-1.50000000"],
    [123456789012345678900000000n, "1234567890123456789.00000000"],
    [10n ** 40n, "100000000000000000000000000000000.00000000"],
  ];
  for (const [value, expected] of table) {
    test(`${value}n → ${expected}`, () => {
      assert.equal(formatDecimal(value), expected);
    });
  }

  test("matches Python's decimal for random values", { skip: PYTHON_SKIP }, () => {
    fc.assert(
      fc.property(fc.array(signedUpToDigits(45), { minLength: 300, maxLength: 300 }), (values) => {
        const expected = runPython(
          PY_FORMAT,
          values.map((v) => [v.toString(), SCALE]),
        ) as string[];
        const mismatches = values.flatMap((v, i) =>
          formatDecimal(v) === expected[i]
            ? []
            : [{ value: `${v}n`, ours: formatDecimal(v), python: expected[i] }],
        );
        assert.deepEqual(mismatches, []);
      }),
      PYTHON_RUNS,
    );
  });
});

describe("formatDecimalAtScale", () => {
  // Expected strings were produced by python3: str(Decimal(f"{v}E{-scale}")).
  const table: [bigint, number, string][] = [
    [5n, 0, "5"],
    [0n, 0, "0"],
    [-7n, 0, "-7"],
    [12345n, 2, "123.45"],
    [0n, 2, "0.00"],
    [1n, 6, "0.000001"],
    [1n, 7, "1E-7"],
    [12n, 7, "0.0000012"],
    [123456n, 6, "0.123456"],
    [1n, 18, "1E-18"],
    [5n, -2, "5E+2"],
    [120n, -3, "1.20E+5"],
    [0n, -2, "0E+2"],
  ];
  for (const [value, scale, expected] of table) {
    test(`${value}n at scale ${scale} → ${expected}`, () => {
      assert.equal(formatDecimalAtScale(value, scale), expected);
    });
  }

  test("is formatDecimal at scale 8", () => {
    fc.assert(
      fc.property(signedUpToDigits(30), (v) => {
        assert.equal(formatDecimalAtScale(v, SCALE), formatDecimal(v));
      }),
    );
  });

  test("refuses a scale that is not an integer", () => {
    for (const scale of [1.5, Number.NaN, Number.POSITIVE_INFINITY, 2 ** 60]) {
      assert.throws(() => formatDecimalAtScale(1n, scale), RangeError);
    }
  });

  test("matches Python's decimal for random values and scales", { skip: PYTHON_SKIP }, () => {
    const pair = fc.tuple(signedUpToDigits(30), fc.integer({ min: -6, max: 24 }));
    fc.assert(
      fc.property(fc.array(pair, { minLength: 300, maxLength: 300 }), (pairs) => {
        const expected = runPython(
          PY_FORMAT,
          pairs.map(([v, s]) => [v.toString(), s]),
        ) as string[];
        const mismatches = pairs.flatMap(([v, s], i) =>
          formatDecimalAtScale(v, s) === expected[i]
            ? []
            : [{ value: `${v}n`, scale: s, python: expected[i] }],
        );
        assert.deepEqual(mismatches, []);
      }),
      PYTHON_RUNS,
    );
  });
});

describe("mulDiv", () => {
  test("rounds in the named direction", () => {
    const cases: [bigint, bigint, bigint, bigint, bigint][] = [
      // a, b, d, down, up
      [7n, 1n, 2n, 3n, 4n],
      [6n, 1n, 2n, 3n, 3n],
      [0n, 5n, 3n, 0n, 0n],
      [1n, 1n, 3n, 0n, 1n],
      [10n ** 30n, 10n ** 30n, 3n, 10n ** 60n / 3n, 10n ** 60n / 3n + 1n],
    ];
    for (const [a, b, d, down, up] of cases) {
      assert.equal(mulDiv(a, b, d, "down"), down, `${a}*${b}/${d} down`);
      assert.equal(mulDiv(a, b, d, "up"), up, `${a}*${b}/${d} up`);
    }
  });

  test("brackets the exact quotient", () => {
    const nonNegative = bigIntUpToDigits(30, 0n);
    fc.assert(
      fc.property(nonNegative, nonNegative, bigIntUpToDigits(20, 1n), (a, b, d) => {
        const product = a * b;
        const down = mulDiv(a, b, d, "down");
        const up = mulDiv(a, b, d, "up");
        assert.ok(down * d <= product && product < (down + 1n) * d);
        assert.ok(up * d >= product && product > (up - 1n) * d);
        assert.equal(up - down, product % d === 0n ? 0n : 1n);
      }),
      { numRuns: 1000 },
    );
  });

  test("treats negative operands and non-positive divisors as bugs", () => {
    assert.throws(() => mulDiv(-1n, 1n, 1n, "down"), RangeError);
    assert.throws(() => mulDiv(1n, -1n, 1n, "up"), RangeError);
    assert.throws(() => mulDiv(1n, 1n, 0n, "down"), RangeError);
    assert.throws(() => mulDiv(1n, 1n, -1n, "up"), RangeError);
    assert.throws(() => mulDiv(1n, 1n, 3n, "nearest" as Rounding), RangeError);
  });
});

describe("mul", () => {
  test("multiplies scale-8 amounts and rounds as told", () => {
    assert.equal(mul(150000000n, 200000000n, "down"), 300000000n);
    assert.equal(mul(1n, 1n, "down"), 0n);
    assert.equal(mul(1n, 1n, "up"), 1n);
    assert.equal(mul(123456789n, 50000000n, "down"), 61728394n);
    assert.equal(mul(123456789n, 50000000n, "up"), 61728395n);
    assert.equal(mul(ONE, 987654321n, "up"), 987654321n);
    assert.throws(() => mul(-ONE, ONE, "down"), RangeError);
  });
});

describe("roundToPlaces", () => {
  test("rounds to the given places and stays at scale 8", () => {
    const cases: [bigint, number, Rounding, bigint][] = [
      [123456789n, 2, "up", 124000000n],
      [123456789n, 2, "down", 123000000n],
      [123456789n, 8, "up", 123456789n],
      [123456789n, 0, "up", 200000000n],
      [123456789n, 0, "down", ONE],
      [ONE, 0, "up", ONE],
      [0n, 3, "up", 0n],
      [1n, 7, "up", 10n],
      [1n, 7, "down", 0n],
      [-123456789n, 2, "up", -124000000n],
      [-123456789n, 2, "down", -123000000n],
    ];
    for (const [v, places, rounding, expected] of cases) {
      assert.equal(roundToPlaces(v, places, rounding), expected, `${v} ${places} ${rounding}`);
    }
  });

  test("lands on the grid within one step, in the named direction", () => {
    fc.assert(
      fc.property(signedUpToDigits(30), fc.integer({ min: 0, max: SCALE }), (v, places) => {
        const step = 10n ** BigInt(SCALE - places);
        const up = roundToPlaces(v, places, "up");
        const down = roundToPlaces(v, places, "down");
        const abs = (x: bigint) => (x < 0n ? -x : x);
        for (const r of [up, down]) assert.equal(r % step, 0n);
        assert.ok(abs(up) >= abs(v) && abs(up) - abs(v) < step);
        assert.ok(abs(down) <= abs(v) && abs(v) - abs(down) < step);
        assert.equal(roundToPlaces(up, places, "down"), up, "idempotent on the grid");
      }),
      { numRuns: 1000 },
    );
  });

  test("refuses places outside 0..8", () => {
    for (const places of [-1, 9, 1.5, Number.NaN]) {
      assert.throws(() => roundToPlaces(ONE, places, "up"), RangeError);
    }
    assert.throws(() => roundToPlaces(ONE, 2, "nearest" as Rounding), RangeError);
  });
});
