// Decimal amounts in request bodies: the one strict parser (protocol/money.ts), then the upper
// bound of config/limits.ts; failures become a 422 at the field's location.

import { ONE, parseAmount } from "@counterpart/protocol";
import { limits } from "../config/limits.ts";
import { validationError } from "./http-error.ts";

export function amountField(value: unknown, loc: (string | number)[]): bigint {
  const parsed = parseAmount(value);
  if (!parsed.ok) throw validationError([{ loc, msg: parsed.msg, type: parsed.type }]);
  if (parsed.value > limits.amountWholeUnitsMax * ONE) {
    throw validationError([
      {
        loc,
        msg: `Input should be less than or equal to ${limits.amountWholeUnitsMax}`,
        type: "less_than_equal",
      },
    ]);
  }
  return parsed.value;
}
