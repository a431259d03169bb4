// Decimal amounts in request bodies: the one strict parser (protocol/money.ts), then the upper
// bound of config/limits.ts; failures become a 422 at the field's location. The admin API's
// decimals (prices, volumes, rates) take the same bound.

import { ONE, parseAmount, parseDecimal } from "@counterpart/protocol";
import { limits } from "../config/limits.ts";
import { validationError } from "./http-error.ts";

function overTheBound(loc: (string | number)[]) {
  return validationError([
    {
      loc,
      msg: `Input should be less than or equal to ${limits.amountWholeUnitsMax}`,
      type: "less_than_equal",
    },
  ]);
}

export function amountField(value: unknown, loc: (string | number)[]): bigint {
  const parsed = parseAmount(value);
  if (!parsed.ok) throw validationError([{ loc, msg: parsed.msg, type: parsed.type }]);
  if (parsed.value > limits.amountWholeUnitsMax * ONE) throw overTheBound(loc);
  return parsed.value;
}

/**
 * A decimal of the admin API (at most 8 places, as protocol/money.ts's parseDecimal reads it) that
 * `rule` accepts, no larger than an amount may be: stored prices, volumes and rates stay far inside
 * NUMERIC(38,8) (a price of 10^30 was a 500 until 30 November).
 */
export function decimalField(
  value: string,
  loc: (string | number)[],
  rule: (v: bigint) => boolean,
  ruleText: string,
): bigint {
  const v = parseDecimal(value);
  if (v === null || !rule(v)) {
    throw validationError([{ loc, msg: `Input should be ${ruleText}`, type: "decimal_parsing" }]);
  }
  if (v > limits.amountWholeUnitsMax * ONE) throw overTheBound(loc);
  return v;
}
