// The switch between the sandbox and production is configuration, not code: the same three
// variables the partner CLI reads name the service, the partner and its key. A sandbox and the
// production service each register their own partner id and public key, so a sandbox key is
// refused (401) by production and the other way round.

import fs from "node:fs";
import type { CounterpartOptions } from "./config.ts";

/**
 * baseUrl, partnerId and privateKey from the environment: COUNTERPART_URL, COUNTERPART_PARTNER_ID,
 * and the key as PEM text in COUNTERPART_PRIVATE_KEY or as a file in COUNTERPART_KEY_FILE.
 * Throws a TypeError naming every missing variable.
 */
export function optionsFromEnv(
  env: Readonly<Record<string, string | undefined>> = process.env,
): Pick<CounterpartOptions, "baseUrl" | "partnerId" | "privateKey"> {
  const baseUrl = env.COUNTERPART_URL || null;
  const partnerId = env.COUNTERPART_PARTNER_ID || null;
  const keyText = env.COUNTERPART_PRIVATE_KEY || null;
  const keyFile = env.COUNTERPART_KEY_FILE || null;
  const missing = [
    ...(baseUrl === null ? ["COUNTERPART_URL"] : []),
    ...(partnerId === null ? ["COUNTERPART_PARTNER_ID"] : []),
    ...(keyText === null && keyFile === null ? ["COUNTERPART_KEY_FILE (or COUNTERPART_PRIVATE_KEY)"] : []),
  ];
  if (baseUrl === null || partnerId === null || missing.length > 0) {
    throw new TypeError(`optionsFromEnv: set ${missing.join(", ")}`);
  }
  let privateKey = keyText;
  if (privateKey === null) {
    try {
      privateKey = fs.readFileSync(keyFile!, "utf8");
    } catch (err) {
      throw new TypeError(`optionsFromEnv: cannot read COUNTERPART_KEY_FILE ${keyFile}`, { cause: err });
    }
  }
  return { baseUrl, partnerId, privateKey };
}
