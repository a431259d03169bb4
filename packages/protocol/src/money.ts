/*
 * Money for the Counterpart wire protocol. Amounts travel as decimal strings
 * and live in memory as bigints at a fixed scale of 8 (1.5 is 150000000n); a
 * JS number never carries money, because binary floats cannot represent most
 * decimal fractions and silently lose digits beyond 2^53. This module is the
 * one place where text becomes Money and Money becomes text: parsing is strict
 * and bounded so hostile input costs microseconds, formatting reproduces
 * Python's Decimal string form so both implementations emit identical bytes,
 * and every division names its rounding direction so the choice is visible at
 * the call site.
 */

/** An amount at fixed scale 8: the integer number of 1E-8 units. */
export type Money = bigint;

export const SCALE = 8;
export const ONE: Money = 100000000n;

export type ParseResult = { ok: true; value: bigint } | { ok: false; type: string; msg: string };

/** "up" rounds away from zero, "down" rounds toward zero. */
export type Rounding = "up" | "down";

// Whole-string anchors and no alternation between overlapping branches keep
// the match linear, so arbitrarily long input cannot backtrack.
const DECIMAL_PATTERN = /^(-?)([0-9]+)(?:\.([0-9]+))?(?:[eE]([+-]?)([0-9]+))?$/;

// These bounds are what keeps BigInt work cheap: the largest value we ever
// build is a 40-digit coefficient times 10^78, whatever the input length.
const MAX_EXPONENT = 30;
const MAX_SIGNIFICANT_DIGITS = 40;

/** A decimal reduced to coefficient × 10^exponent with no redundant zeros. */
type Decoded = {
  negative: boolean;
  /** Digits without leading or trailing zeros; "" for zero. */
  coefficient: string;
  /** 0 for zero, so zero never counts as having decimal places. */
  exponent: number;
};

function decode(input: string): Decoded | null {
  const match = DECIMAL_PATTERN.exec(input);
  if (match === null) return null;
  const [, sign = "", intDigits = "", fracDigits = "", expSign = "", expDigits = ""] = match;

  const expMagnitude = stripLeadingZeros(expDigits);
  // Judged on the text: however many digits it has, a longer exponent is out of range.
  if (expMagnitude.length > 2) return null;
  const exp = expSign === "-" ? -Number(expMagnitude || "0") : Number(expMagnitude || "0");
  if (Math.abs(exp) > MAX_EXPONENT) return null;

  const intSignificant = stripLeadingZeros(intDigits);
  let coefficient: string;
  if (intSignificant.length > 0) {
    // Compare lengths before concatenating so oversized input is never copied.
    if (intSignificant.length + fracDigits.length > MAX_SIGNIFICANT_DIGITS) return null;
    coefficient = intSignificant + fracDigits;
  } else {
    coefficient = stripLeadingZeros(fracDigits);
    if (coefficient.length > MAX_SIGNIFICANT_DIGITS) return null;
  }

  let exponent = exp - fracDigits.length;
  // Trailing zeros are not precision the caller asked for: "1.000000000000"
  // is an exact whole number and must not trip the decimal-places rule.
  let end = coefficient.length;
  while (end > 0 && coefficient.charCodeAt(end - 1) === 48) end--;
  exponent += coefficient.length - end;
  coefficient = coefficient.slice(0, end);
  if (coefficient === "") exponent = 0;

  return { negative: sign === "-", coefficient, exponent };
}

function stripLeadingZeros(digits: string): string {
  let start = 0;
  while (start < digits.length && digits.charCodeAt(start) === 48) start++;
  return digits.slice(start);
}

function decimalPlaces(decoded: Decoded): number {
  return decoded.exponent < 0 ? -decoded.exponent : 0;
}

/** Only valid once decimalPlaces(decoded) <= SCALE, so the shift is never negative. */
function toScaled(decoded: Decoded): bigint {
  if (decoded.coefficient === "") return 0n;
  const magnitude = BigInt(decoded.coefficient) * 10n ** BigInt(decoded.exponent + SCALE);
  return decoded.negative ? -magnitude : magnitude;
}

/**
 * Parses a client-supplied amount. The error types and messages are those a
 * pydantic `Decimal` field with `gt=0, decimal_places=8` reports, and the
 * checks run in pydantic's order (decimal places before sign), so a request
 * that both implementations reject gets the same error from either.
 */
export function parseAmount(input: unknown): ParseResult {
  if (typeof input !== "string") {
    return { ok: false, type: "string_type", msg: "Input should be a valid string" };
  }
  const decoded = decode(input);
  if (decoded === null) {
    return { ok: false, type: "decimal_parsing", msg: "Input should be a valid decimal" };
  }
  if (decimalPlaces(decoded) > SCALE) {
    return {
      ok: false,
      type: "decimal_max_places",
      msg: "Decimal input should have no more than 8 decimal places",
    };
  }
  const value = toScaled(decoded);
  if (value <= 0n) {
    return { ok: false, type: "greater_than", msg: "Input should be greater than 0" };
  }
  return { ok: true, value };
}

/**
 * Parses an operator-typed decimal (a price or a limit) at scale 8. Zero and
 * negatives are legitimate here, but silently rounding what an operator typed
 * is not, so more than 8 places yields null rather than a nearby value.
 */
export function parseDecimal(input: string): bigint | null {
  // RegExp.exec would coerce a number to text, so a stray JS number from
  // untyped callers must be refused here rather than accepted as money.
  if (typeof input !== "string") return null;
  const decoded = decode(input);
  if (decoded === null || decimalPlaces(decoded) > SCALE) return null;
  return toScaled(decoded);
}

/**
 * Renders value × 10^-scale exactly as the General Decimal Arithmetic
 * to-scientific-string does (Python's `str(Decimal)`), including its switch
 * to exponent notation for tiny magnitudes, so responses stay byte-identical
 * to those of the Python implementation.
 */
export function formatDecimalAtScale(value: bigint, scale: number): string {
  if (!Number.isSafeInteger(scale)) {
    throw new RangeError(`scale must be a safe integer, got ${scale}`);
  }
  const negative = value < 0n;
  const digits = (negative ? -value : value).toString();
  const exponent = -scale;
  const adjusted = exponent + digits.length - 1;

  let body: string;
  if (exponent <= 0 && adjusted >= -6) {
    const integerDigits = digits.length + exponent;
    if (exponent === 0) {
      body = digits;
    } else if (integerDigits > 0) {
      body = `${digits.slice(0, integerDigits)}.${digits.slice(integerDigits)}`;
    } else {
      body = `0.${"0".repeat(-integerDigits)}${digits}`;
    }
  } else {
    const fraction = digits.length > 1 ? `.${digits.slice(1)}` : "";
    body = `${digits.slice(0, 1)}${fraction}E${adjusted >= 0 ? "+" : ""}${adjusted}`;
  }
  return negative ? `-${body}` : body;
}

/** Renders a scale-8 amount; see formatDecimalAtScale. */
export function formatDecimal(value: bigint): string {
  return formatDecimalAtScale(value, SCALE);
}

/**
 * a × b / d, exact, then rounded in the named direction. Negative operands
 * are refused because "up" and "down" would be ambiguous for them and every
 * current caller works with magnitudes; reaching this with one is a bug.
 */
export function mulDiv(a: bigint, b: bigint, d: bigint, rounding: Rounding): bigint {
  if (a < 0n || b < 0n) {
    throw new RangeError(`mulDiv operands must be non-negative, got ${a} and ${b}`);
  }
  if (d <= 0n) {
    throw new RangeError(`mulDiv divisor must be positive, got ${d}`);
  }
  const product = a * b;
  const quotient = product / d;
  if (rounding === "down") return quotient;
  // Checked rather than assumed, since an untyped caller's typo would
  // otherwise silently round up.
  if (rounding !== "up") throw new RangeError(`unknown rounding ${String(rounding)}`);
  return product % d === 0n ? quotient : quotient + 1n;
}

/** Product of two scale-8 amounts (e.g. quantity × price), back at scale 8. */
export function mul(a: Money, b: Money, rounding: Rounding): Money {
  return mulDiv(a, b, ONE, rounding);
}

/**
 * Rounds a scale-8 amount to `places` decimal places while keeping it at
 * scale 8, for venues that quote coarser increments. Negative values round
 * symmetrically ("up" still means away from zero) so the direction names one
 * meaning everywhere.
 */
export function roundToPlaces(v: Money, places: number, rounding: Rounding): Money {
  if (!Number.isInteger(places) || places < 0 || places > SCALE) {
    throw new RangeError(`places must be an integer in 0..${SCALE}, got ${places}`);
  }
  if (rounding !== "up" && rounding !== "down") {
    throw new RangeError(`unknown rounding ${String(rounding)}`);
  }
  const unit = 10n ** BigInt(SCALE - places);
  const magnitude = v < 0n ? -v : v;
  let units = magnitude / unit;
  if (rounding === "up" && magnitude % unit !== 0n) units += 1n;
  const rounded = units * unit;
  return v < 0n ? -rounded : rounded;
}
