// NUMERIC(p,8) columns come back as plain text with exactly eight decimals ("349250.00000000");
// money in the service is a bigint at scale 8. These functions are the only crossing.

import { formatDecimal } from "@counterpart/protocol";

export function moneyFromPg(text: string): bigint {
  const m = /^(-?)([0-9]+)(?:\.([0-9]{1,8}))?$/.exec(text);
  if (m === null) throw new Error(`unexpected NUMERIC text from the database: ${text}`);
  const units = BigInt((m[2] ?? "0") + (m[3] ?? "").padEnd(8, "0"));
  return m[1] === "-" ? -units : units;
}

export function moneyToPg(value: bigint): string {
  const negative = value < 0n;
  const digits = (negative ? -value : value).toString().padStart(9, "0");
  return `${negative ? "-" : ""}${digits.slice(0, -8)}.${digits.slice(-8)}`;
}

/**
 * An amount as the wire writes it (formatDecimal), from its NUMERIC text: what
 * `formatDecimal(moneyFromPg(text))` gives, for a view that only passes a stored amount on. The
 * wire's form is the text itself when it has eight decimals and is not to be written with an
 * exponent: a nonzero integer part, or a zero one followed by at most five zeros (1E-6 and up,
 * "0.00000100"). Any other text, zero included ("0E-8"), takes the way through a bigint.
 */
export function decimalFromPg(text: string): string {
  return plainAtScale8.test(text) ? text : formatDecimal(moneyFromPg(text));
}

const plainAtScale8 = /^-?(?:[1-9][0-9]*|0(?=\.0{0,5}[1-9]))\.[0-9]{8}$/;
