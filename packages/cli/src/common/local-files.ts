// What the CLI reads from disk: the data folder a running sandbox writes (endpoints.json, the
// admin token, the demo partner) and the operator's key files. Problems with files the operator
// named are bad input (exit 2).

import { createPrivateKey, type KeyObject } from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import { parsePublicKey } from "@counterpart/protocol";
import { fileErrorReason, UsageError } from "./errors.ts";

export type Env = Record<string, string | undefined>;

/** Key files are a few hundred bytes; anything larger is not one (and may be /dev/zero). */
const keyFileBytesMax = 16 * 1024;

/** The data folder: DATA_DIR, else ./.data (as the server resolves it). */
export function dataDir(env: Env): string {
  return path.resolve(env.DATA_DIR || ".data");
}

export interface Endpoints {
  partner_url: string | null;
  admin_url: string | null;
}

/** endpoints.json of the data folder, or null when there is none (or it cannot be read). */
export function readEndpoints(dir: string): Endpoints | null {
  try {
    const raw = JSON.parse(fs.readFileSync(path.join(dir, "endpoints.json"), "utf8")) as Partial<Endpoints>;
    return {
      partner_url: typeof raw.partner_url === "string" ? raw.partner_url : null,
      admin_url: typeof raw.admin_url === "string" ? raw.admin_url : null,
    };
  } catch {
    return null;
  }
}

/** The admin token the sandbox generated into the data folder, or null. */
export function readFolderAdminToken(dir: string): string | null {
  try {
    const token = fs.readFileSync(path.join(dir, "admin-token"), "utf8").trim();
    return token === "" ? null : token;
  } catch {
    return null;
  }
}

export interface DemoPartner {
  partnerId: string;
  privateKeyPath: string;
}

/** The sandbox's demo partner (demo-partner/partner.json and its private key), or null. */
export function readDemoPartner(dir: string): DemoPartner | null {
  const folder = path.join(dir, "demo-partner");
  const privateKeyPath = path.join(folder, "private-key.pem");
  try {
    const info = JSON.parse(fs.readFileSync(path.join(folder, "partner.json"), "utf8")) as {
      partner_id?: unknown;
    };
    if (typeof info.partner_id !== "string" || !fs.existsSync(privateKeyPath)) return null;
    return { partnerId: info.partner_id, privateKeyPath };
  } catch {
    return null;
  }
}

function readKeyFile(file: string, what: string): string {
  let text: string;
  try {
    const stat = fs.statSync(file);
    if (stat.isDirectory()) throw new UsageError(`cannot read ${what} file ${file}: is a directory`);
    if (stat.size > keyFileBytesMax)
      throw new UsageError(`${file} is not a ${what} file (${stat.size} bytes)`);
    text = fs.readFileSync(file, "utf8");
  } catch (err) {
    if (err instanceof UsageError) throw err;
    throw new UsageError(`cannot read ${what} file ${file}: ${fileErrorReason(err)}`);
  }
  return text;
}

const publicKeyProblems: Record<"not_pem" | "not_ed25519" | "small_order", string> = {
  not_pem: "is not a public key PEM (expected one -----BEGIN PUBLIC KEY----- block)",
  not_ed25519: "is not an Ed25519 public key",
  small_order: "is a small-order Ed25519 key, which is refused",
};

/**
 * Reads and checks a partner public key file locally, before any call to the admin API: one
 * Ed25519 SubjectPublicKeyInfo PEM block, not a small-order point. Returns the PEM to send.
 */
export function readPublicKeyFile(file: string): string {
  const text = readKeyFile(file, "public key");
  const parsed = parsePublicKey(text);
  if (!parsed.ok) throw new UsageError(`${file} ${publicKeyProblems[parsed.reason]}`);
  return parsed.pem;
}

/** Reads a partner private key file: an unencrypted Ed25519 private key PEM. */
export function readPrivateKeyFile(file: string): KeyObject {
  return parsePrivateKeyPem(readKeyFile(file, "private key"), file);
}

/** A partner private key from its PEM text; `source` names where it came from in a refusal. */
export function parsePrivateKeyPem(text: string, source: string): KeyObject {
  let key: KeyObject;
  try {
    key = createPrivateKey({ key: text, format: "pem" });
  } catch {
    throw new UsageError(`${source} is not an unencrypted private key PEM`);
  }
  if (key.asymmetricKeyType !== "ed25519") throw new UsageError(`${source} is not an Ed25519 private key`);
  return key;
}
