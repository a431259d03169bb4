// Who a partner command signs as and where it sends: one resolution shared by `call` and every
// partner command (docs/reference.md §5). Each value comes from its flag, else its environment variable, else the
// sandbox the data folder describes (DATA_DIR, else ./.data): endpoints.json for the address, and
// demo-partner/partner.json with demo-partner/private-key.pem for the demo partner. The variables
// are the SDK's (optionsFromEnv): COUNTERPART_URL, COUNTERPART_PARTNER_ID, and the key as PEM text
// in COUNTERPART_PRIVATE_KEY or as a file in COUNTERPART_KEY_FILE, the text first as there.

import type { KeyObject } from "node:crypto";
import type { Command } from "commander";
import { UsageError } from "../common/errors.ts";
import {
  dataDir,
  type Env,
  parsePrivateKeyPem,
  readDemoPartner,
  readEndpoints,
  readPrivateKeyFile,
} from "../common/local-files.ts";

export const defaultPartnerUrl = "http://127.0.0.1:8080";

export interface PartnerFlags {
  partner?: string | undefined;
  key?: string | undefined;
  url?: string | undefined;
}

export interface PartnerSigner {
  partnerId: string;
  /** Where the key came from, for messages: "the key file F" or "COUNTERPART_PRIVATE_KEY". */
  keySource: string;
  privateKey: KeyObject;
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
      "the partner's Ed25519 private key PEM file (default: the PEM text in COUNTERPART_PRIVATE_KEY, else COUNTERPART_KEY_FILE, else the demo partner's key)",
    )
    .option(
      "--url <base>",
      `partner API base URL (default: COUNTERPART_URL, else DATA_DIR/endpoints.json, else ${defaultPartnerUrl})`,
    );
}

/**
 * The partner id and its private key, read: both from flags or environment, else the sandbox's
 * demo partner.
 */
export function resolveSigner(flags: PartnerFlags, env: Env): PartnerSigner {
  const partnerId = flags.partner || env.COUNTERPART_PARTNER_ID || null;
  const keyText = flags.key ? null : env.COUNTERPART_PRIVATE_KEY || null;
  const keyFile = flags.key || (keyText === null ? env.COUNTERPART_KEY_FILE || null : null);
  if (partnerId !== null && keyText !== null) {
    return {
      partnerId,
      keySource: "COUNTERPART_PRIVATE_KEY",
      privateKey: parsePrivateKeyPem(keyText, "COUNTERPART_PRIVATE_KEY"),
    };
  }
  if (partnerId !== null && keyFile !== null) {
    return { partnerId, keySource: `the key file ${keyFile}`, privateKey: readPrivateKeyFile(keyFile) };
  }
  if (partnerId !== null) {
    throw new UsageError(
      "--key FILE is required with --partner (or set COUNTERPART_KEY_FILE, or COUNTERPART_PRIVATE_KEY with the PEM text)",
    );
  }
  if (keyText !== null)
    throw new UsageError(
      "--partner ID is required with COUNTERPART_PRIVATE_KEY (or set COUNTERPART_PARTNER_ID)",
    );
  if (keyFile !== null)
    throw new UsageError("--partner ID is required with --key (or set COUNTERPART_PARTNER_ID)");
  const dir = dataDir(env);
  const demo = readDemoPartner(dir);
  if (demo === null) {
    throw new UsageError(
      `--partner ID and --key FILE are required: there is no sandbox demo partner in ${dir} (set DATA_DIR, or start the sandbox)`,
    );
  }
  return {
    partnerId: demo.partnerId,
    keySource: `the key file ${demo.privateKeyPath}`,
    privateKey: readPrivateKeyFile(demo.privateKeyPath),
  };
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
