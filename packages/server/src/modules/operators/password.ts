// Operator passwords, hashed with scrypt (node:crypto): memory-hard, so a stolen hash costs an
// attacker memory as well as time for every guess. The text kept is "scrypt$N$r$p$salt$hash"
// (salt and hash in base64url), so the cost can be raised later and old hashes still verify.

import crypto from "node:crypto";
import type { Random } from "../../platform/random.ts";

/** 2^15 × 8 × 128 bytes = 32 MiB of memory per hash; about 0.1 s on one core. */
export const scryptCost = { N: 2 ** 15, r: 8, p: 1 } as const;
const keyBytes = 32;
const saltBytes = 16;

export const passwordLengthMin = 12;
export const passwordLengthMax = 256;

function derive(password: string, salt: Buffer, N: number, r: number, p: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    crypto.scrypt(password.normalize("NFC"), salt, keyBytes, { N, r, p, maxmem: 256 * N * r }, (err, key) =>
      err ? reject(err) : resolve(key),
    );
  });
}

export async function hashPassword(password: string, random: Random): Promise<string> {
  const salt = random.bytes(saltBytes);
  const { N, r, p } = scryptCost;
  const key = await derive(password, salt, N, r, p);
  return `scrypt$${N}$${r}$${p}$${salt.toString("base64url")}$${key.toString("base64url")}`;
}

/** A stored hash's parameters when they are sane; anything else verifies nothing. */
function parse(stored: string) {
  const m = /^scrypt\$(\d{1,8})\$(\d{1,3})\$(\d{1,3})\$([A-Za-z0-9_-]{8,64})\$([A-Za-z0-9_-]{16,128})$/.exec(
    stored,
  );
  if (m === null) return null;
  const [N, r, p] = [Number(m[1]), Number(m[2]), Number(m[3])];
  if (N < 2 || N > 2 ** 20 || (N & (N - 1)) !== 0 || r < 1 || r > 32 || p < 1 || p > 16) return null;
  return { N, r, p, salt: Buffer.from(m[4]!, "base64url"), key: Buffer.from(m[5]!, "base64url") };
}

/** Whether `password` is the one `stored` was made from, compared in constant time. */
export async function verifyPassword(password: string, stored: string): Promise<boolean> {
  const h = parse(stored);
  if (h === null) return false;
  const key = await derive(password, h.salt, h.N, h.r, h.p);
  return key.length === h.key.length && crypto.timingSafeEqual(key, h.key);
}

/**
 * A hash no password matches, verified against when the e-mail is unknown or has no password, so
 * that an unknown address takes as long to refuse as a wrong password.
 */
export const decoyHash = `scrypt$${scryptCost.N}$${scryptCost.r}$${scryptCost.p}$${Buffer.alloc(saltBytes).toString("base64url")}$${Buffer.alloc(keyBytes).toString("base64url")}`;
