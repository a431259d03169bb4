// Amounts for arithmetic. The wire's decimal strings (plain or scientific: "100.50000000", "0E-8",
// "1.0E-7") become the protocol's Money, a bigint count of 1E-8 units, and back. Nothing is ever
// rounded: a value with more than 8 decimal places, or that is not a decimal, is refused.

import { formatDecimal, type Money, ONE, parseDecimal, SCALE } from "@counterpart/protocol";

export type { Money };
export { ONE as MONEY_ONE, SCALE as MONEY_SCALE };

/**
 * Parses a decimal string of any wire form into Money (scale 8): `toMoney("0E-8") === 0n`,
 * `toMoney("1.0E-7") === 10n`, `toMoney("100.50000000") === 10050000000n`. Negative values parse.
 * Throws a RangeError for anything else (a JS number, text, more than 8 decimal places, an
 * exponent beyond ±30 or more than 40 significant digits).
 */
export function toMoney(value: string): Money {
  const parsed = typeof value === "string" ? parseDecimal(value) : null;
  if (parsed === null) {
    throw new RangeError(
      `toMoney: ${JSON.stringify(value)} is not a decimal string with at most ${SCALE} decimal places ` +
        '(amounts travel as strings such as "100.5" or "1.0E-7", never as numbers)',
    );
  }
  return parsed;
}

/**
 * Writes Money as a decimal string. By default the service's own form ("0E-8", "1.0E-7",
 * "100.50000000"), which it also accepts as input; `plain` writes fixed-point with all 8 decimals
 * ("0.00000000", "0.00000010"), for display.
 */
export function fromMoney(value: Money, options: { notation?: "wire" | "plain" } = {}): string {
  if (typeof value !== "bigint") throw new TypeError("fromMoney: value must be a bigint at scale 8");
  if ((options.notation ?? "wire") === "wire") return formatDecimal(value);
  const negative = value < 0n;
  const digits = (negative ? -value : value).toString().padStart(SCALE + 1, "0");
  const text = `${digits.slice(0, -SCALE)}.${digits.slice(-SCALE)}`;
  return negative ? `-${text}` : text;
}
