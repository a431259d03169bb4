// The service's webhook signature (docs/reference.md, "Webhooks"): the partners' own rule, turned
// around: X-Signature is Ed25519 over X-Timestamp + "POST" + the endpoint's path and query + the
// SHA-256 of the exact body, with the service's key, named by X-Key-ID.

import crypto, { type KeyObject } from "node:crypto";
import { signRequest } from "@counterpart/protocol";

export interface PublicWebhookKey {
  key_id: string;
  algorithm: "ed25519";
  public_key_pem: string;
}

export class WebhookSigner {
  readonly #key: () => KeyObject;
  #cached: { key: KeyObject; publicKey: PublicWebhookKey } | null = null;
  readonly #pem: () => string;

  /** `pem` is read on first use only. */
  constructor(pem: () => string) {
    this.#pem = pem;
    this.#key = () => this.#load().key;
  }

  #load() {
    if (this.#cached === null) {
      const key = crypto.createPrivateKey(this.#pem());
      const spki = crypto.createPublicKey(key).export({ type: "spki", format: "der" });
      const publicKeyPem = crypto.createPublicKey(key).export({ type: "spki", format: "pem" }).toString();
      const keyId = `whk_${crypto.createHash("sha256").update(spki).digest("base64url").slice(0, 16)}`;
      this.#cached = {
        key,
        publicKey: { key_id: keyId, algorithm: "ed25519", public_key_pem: publicKeyPem },
      };
    }
    return this.#cached;
  }

  publicKeys(): PublicWebhookKey[] {
    return [this.#load().publicKey];
  }

  /** The signature headers of one POST of `body` to `url`, at `nowMs`. */
  headers(url: URL, body: string, nowMs: number, eventId: string): Record<string, string> {
    const signed = signRequest({
      partnerId: "",
      privateKey: this.#key(),
      method: "POST",
      target: `${url.pathname}${url.search}`,
      body,
      nowMs,
    });
    return {
      "X-Event-ID": eventId,
      "X-Timestamp": signed["X-Timestamp"],
      "X-Signature": signed["X-Signature"],
      "X-Key-ID": this.#load().publicKey.key_id,
      "User-Agent": "Counterpart-Webhooks/1",
    };
  }
}
