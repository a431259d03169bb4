// NUMERIC(p,8) columns come back as plain text with exactly eight decimals ("349250.00000000");
// money in the service is a bigint at scale 8. These two functions are the only crossing.

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
