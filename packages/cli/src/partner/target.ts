// Who a partner command signs as and where it sends: one resolution shared by `call` and every
// partner command (docs/reference.md §5). Each value comes from its flag, else its environment variable, else the
// sandbox the data folder describes (DATA_DIR, else ./.data): endpoints.json for the address, and
// demo-partner/partner.json with demo-partner/private-key.pem for the demo partner.

import type { Command } from "commander";
import { UsageError } from "../common/errors.ts";
import { dataDir, type Env, readDemoPartner, readEndpoints } from "../common/local-files.ts";

export const defaultPartnerUrl = "http://127.0.0.1:8080";

export interface PartnerFlags {
  partner?: string | undefined;
  key?: string | undefined;
  url?: string | undefined;
}

export interface PartnerSigner {
  partnerId: string;
  keyFile: string;
}

/** --partner, --key and --url, shared by `call` and the partner commands. */
export function partnerFlags(command: Command): Command {
  return command
    .option(
      "--partner <id>",
      "partner id (default: COUNTERPART_PARTNER_ID, else the sandbox demo partner in DATA_DIR)",
    )
    .option(
      "--key <file>",
      "the partner's Ed25519 private key PEM (default: COUNTERPART_KEY_FILE, else the demo partner's key)",
    )
    .option(
      "--url <base>",
      `partner API base URL (default: COUNTERPART_URL, else DATA_DIR/endpoints.json, else ${defaultPartnerUrl})`,
    );
}

/** The partner id and key file: both from flags or environment, else the sandbox's demo partner. */
export function resolveSigner(flags: PartnerFlags, env: Env): PartnerSigner {
  const partnerId = flags.partner || env.COUNTERPART_PARTNER_ID || null;
  const keyFile = flags.key || env.COUNTERPART_KEY_FILE || null;
  if (partnerId !== null && keyFile !== null) return { partnerId, keyFile };
  if (partnerId !== null)
    throw new UsageError("--key FILE is required with --partner (or set COUNTERPART_KEY_FILE)");
  if (keyFile !== null)
    throw new UsageError("--partner ID is required with --key (or set COUNTERPART_PARTNER_ID)");
  const dir = dataDir(env);
  const demo = readDemoPartner(dir);
  if (demo === null) {
    throw new UsageError(
      `--partner ID and --key FILE are required: there is no sandbox demo partner in ${dir} (set DATA_DIR, or start the sandbox)`,
    );
  }
  return { partnerId: demo.partnerId, keyFile: demo.privateKeyPath };
}

/**
 * The partner API's base URL, checked: an http(s) URL without query or fragment. A path prefix is
 * kept (without its trailing slash), since it is part of every signed path.
 */
export function resolveBaseUrl(flags: PartnerFlags, env: Env): URL {
  const base =
    flags.url || env.COUNTERPART_URL || readEndpoints(dataDir(env))?.partner_url || defaultPartnerUrl;
  const option = flags.url ? "--url" : env.COUNTERPART_URL ? "COUNTERPART_URL" : "the partner URL";
  let url: URL;
  try {
    url = new URL(base);
  } catch {
    throw new UsageError(`${option}: "${base}" is not a URL (expected e.g. ${defaultPartnerUrl})`);
  }
  if ((url.protocol !== "http:" && url.protocol !== "https:") || url.search !== "" || url.hash !== "") {
    throw new UsageError(`${option}: "${base}" is not an http:// or https:// base URL without query`);
  }
  if (url.username !== "" || url.password !== "") {
    throw new UsageError(`${option}: "${base}" must not carry credentials`);
  }
  return new URL(`${url.origin}${url.pathname.replace(/\/+$/, "")}`);
}

/** The base URL as text without a trailing slash, e.g. "http://127.0.0.1:8080". */
export function baseUrlText(url: URL): string {
  return `${url.origin}${url.pathname.replace(/\/+$/, "")}`;
}
