// What a zero-setup start leaves in the data folder: the admin token (mode 0600), where the admin
// API listens, and a demo partner with its key pair, so a partner request can be signed at once.

import crypto from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import { generateKeyPair } from "@counterpart/protocol";
import { systemNote } from "./modules/audit/index.ts";
import type { PartnersService } from "./modules/partners/index.ts";

export interface DemoPartner {
  partnerId: string;
  privateKeyPath: string;
  publicKeyPath: string;
}

/** The admin token: ADMIN_TOKEN when given, else the one kept in the data folder, made once. */
export function adminToken(dataDir: string, configured: string | null): string {
  if (configured !== null) return configured;
  const file = path.join(dataDir, "admin-token");
  if (fs.existsSync(file)) return fs.readFileSync(file, "utf8").trim();
  fs.mkdirSync(dataDir, { recursive: true });
  const token = crypto.randomBytes(32).toString("base64url");
  fs.writeFileSync(file, `${token}\n`, { mode: 0o600 });
  return token;
}

/**
 * A secret kept in the data folder, made once (used when the environment gives none). Several API
 * processes may ask for it at the same moment: the secret is written aside and hard-linked into
 * place, which fails if another process won, so every process reads the one secret that won and
 * never a half-written file.
 */
export function folderSecret(dataDir: string, name: string, configured: string | null): string {
  if (configured !== null) return configured;
  const file = path.join(dataDir, name);
  if (!fs.existsSync(file)) {
    fs.mkdirSync(dataDir, { recursive: true });
    const aside = `${file}.${process.pid}.${crypto.randomBytes(4).toString("hex")}`;
    fs.writeFileSync(aside, `${crypto.randomBytes(32).toString("base64url")}\n`, { mode: 0o600, flag: "wx" });
    try {
      fs.linkSync(aside, file);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "EEXIST") throw err;
    } finally {
      fs.rmSync(aside, { force: true });
    }
  }
  return fs.readFileSync(file, "utf8").trim();
}

/** Where the running service listens, for the CLI and scripts started beside it. */
export function writeEndpoints(
  dataDir: string,
  endpoints: { partner_url: string | null; admin_url: string | null },
): void {
  fs.mkdirSync(dataDir, { recursive: true });
  fs.writeFileSync(path.join(dataDir, "endpoints.json"), `${JSON.stringify(endpoints, null, 2)}\n`);
}

/** Creates the demo partner once; later starts reuse it (and its keys) as long as it exists. */
export async function ensureDemoPartner(dataDir: string, partners: PartnersService): Promise<DemoPartner> {
  const dir = path.join(dataDir, "demo-partner");
  const infoPath = path.join(dir, "partner.json");
  const privateKeyPath = path.join(dir, "private-key.pem");
  const publicKeyPath = path.join(dir, "public-key.pem");
  if (fs.existsSync(infoPath)) {
    const info = JSON.parse(fs.readFileSync(infoPath, "utf8")) as { partner_id: string };
    const existing = await partners.show(info.partner_id);
    if (existing.ok) return { partnerId: info.partner_id, privateKeyPath, publicKeyPath };
  }
  fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
  const keys = generateKeyPair();
  const created = await partners.create(
    {
      name: "Demo Partner",
      publicKeyPem: keys.publicKeyPem,
      allowIps: ["127.0.0.1/32", "::1/128"],
    },
    systemNote,
  );
  if (!created.ok) throw new Error(`could not create the demo partner: ${created.error}`);
  fs.writeFileSync(privateKeyPath, keys.privateKeyPem, { mode: 0o600 });
  fs.writeFileSync(publicKeyPath, keys.publicKeyPem);
  fs.writeFileSync(infoPath, `${JSON.stringify({ partner_id: created.partner.id }, null, 2)}\n`);
  return { partnerId: created.partner.id, privateKeyPath, publicKeyPath };
}

/**
 * The service's Ed25519 key for signing webhooks: WEBHOOK_SIGNING_KEY when given, else the one kept
 * in the data folder, made once (written aside and hard-linked into place, as folderSecret does).
 */
export function folderSigningKey(dataDir: string, configured: string | null): string {
  if (configured !== null) return configured;
  const file = path.join(dataDir, "webhook-signing-key.pem");
  if (!fs.existsSync(file)) {
    fs.mkdirSync(dataDir, { recursive: true });
    const aside = `${file}.${process.pid}.${crypto.randomBytes(4).toString("hex")}`;
    fs.writeFileSync(aside, generateKeyPair().privateKeyPem, { mode: 0o600, flag: "wx" });
    try {
      fs.linkSync(aside, file);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "EEXIST") throw err;
    } finally {
      fs.rmSync(aside, { force: true });
    }
  }
  return fs.readFileSync(file, "utf8");
}
