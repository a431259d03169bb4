// The options for a local sandbox's demo partner: `npm start` writes its address, the demo
// partner's id and its private key into the data folder, and this reads them back.

import fs from "node:fs";
import path from "node:path";
import type { CounterpartOptions } from "./config.ts";

/**
 * baseUrl, partnerId and privateKey of the sandbox whose data folder is `dataDir` (default
 * ./.data, as `npm start` uses): DATA_DIR/endpoints.json and DATA_DIR/demo-partner/.
 */
export function sandboxOptions(
  dataDir = ".data",
): Pick<CounterpartOptions, "baseUrl" | "partnerId" | "privateKey"> {
  const read = (file: string): string => {
    const full = path.join(dataDir, file);
    try {
      return fs.readFileSync(full, "utf8");
    } catch (err) {
      throw new Error(
        `sandboxOptions: cannot read ${full}; start the sandbox (npm start) with this DATA_DIR first`,
        {
          cause: err,
        },
      );
    }
  };
  const endpoints = JSON.parse(read("endpoints.json")) as { partner_url?: unknown };
  const partner = JSON.parse(read(path.join("demo-partner", "partner.json"))) as { partner_id?: unknown };
  if (typeof endpoints.partner_url !== "string" || typeof partner.partner_id !== "string") {
    throw new Error(
      `sandboxOptions: ${dataDir} does not hold a sandbox's endpoints.json and demo-partner/partner.json`,
    );
  }
  return {
    baseUrl: endpoints.partner_url,
    partnerId: partner.partner_id,
    privateKey: read(path.join("demo-partner", "private-key.pem")),
  };
}
