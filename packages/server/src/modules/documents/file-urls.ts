// Download links signed by the service (docs/decisions.md, "Documents": valid 900 seconds, an
// HMAC, served without partner headers). A link names the file key, its expiry in Unix seconds and an HMAC-SHA256 of
// both under the file URL secret; changing any of them, or using it after its expiry (judged by
// the injected clock), makes it worthless.

import crypto from "node:crypto";
import { limits } from "../../config/limits.ts";

export interface SignedFileQuery {
  expires: number;
  signature: string;
}

const expiresPattern = /^[0-9]{1,12}$/;
const signaturePattern = /^[A-Za-z0-9_-]{43}$/;

export class FileUrlSigner {
  readonly #secret: () => string;

  /** `secret` is asked for on first use, so a service that serves no file never creates one. */
  constructor(secret: () => string) {
    this.#secret = secret;
  }

  #mac(key: string, expires: number): Buffer {
    return crypto.createHmac("sha256", this.#secret()).update(`file:${key}:${expires}`).digest();
  }

  /** The query of a link to `key` valid for the URL lifetime from `nowMs` (never longer). */
  sign(key: string, nowMs: number): SignedFileQuery {
    const expires = Math.floor(nowMs / 1000) + limits.fileUrlLifetimeSeconds;
    return { expires, signature: this.#mac(key, expires).toString("base64url") };
  }

  /** Whether a link's expiry and signature are the service's own for `key`, and not yet expired. */
  verify(key: string, expires: string, signature: string, nowMs: number): boolean {
    if (!expiresPattern.test(expires) || !signaturePattern.test(signature)) return false;
    const expected = this.#mac(key, Number(expires));
    const given = Buffer.from(signature, "base64url");
    // A canonical encoding only: base64url's last character carries spare bits that must be zero.
    if (given.length !== expected.length || given.toString("base64url") !== signature) return false;
    if (!crypto.timingSafeEqual(given, expected)) return false;
    return nowMs <= Number(expires) * 1000;
  }
}
