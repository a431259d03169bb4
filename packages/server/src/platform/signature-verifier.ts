// Ed25519 verification of the partners' signatures (docs/decisions.md, "Signatures verified by
// libsodium"). libsodium (through sodium-native, a prebuilt Node-API add-on) verifies in about half
// the time of node:crypto (OpenSSL): 50 against 103 µs a signature on the benchmarks' machine, and
// a signed request costs at least one verification, a refused one three. node:crypto stays the
// fallback: where the add-on cannot be loaded (a platform without a prebuilt binary), or fails the
// known-answer check below, or where the operator asks for it (SIGNATURE_VERIFIER=node).
//
// The two agree on every signature an RFC 8032 signer makes. libsodium is stricter on forms no
// signer makes: it also refuses a signature whose R is a point of small order and any signature
// under a key that is of small order or not canonically encoded. Small-order keys are refused at
// registration; a key not canonically encoded is a point whose discrete logarithm nobody knows, so
// no signature under it verifies with either. Neither library's time depends on a secret: every
// input is public (the key, the message, the signature).

import crypto, { type KeyObject } from "node:crypto";
import { createRequire } from "node:module";

/** What the service asks of the add-on: libsodium's crypto_sign_verify_detached. */
interface Sodium {
  crypto_sign_verify_detached(signature: Uint8Array, message: Uint8Array, publicKey: Uint8Array): boolean;
}

export type VerifierLibrary = "libsodium" | "node";

/** A partner's (or the stand-in's) public key, in the form each library takes it. */
export interface VerifyKey {
  readonly key: KeyObject;
  /** The 32 bytes of the key (RFC 8032's encoding). */
  readonly raw: Buffer;
}

export interface SignatureVerifier {
  readonly library: VerifierLibrary;
  /** Whether `signature` (64 bytes) is `key`'s over `message`; never throws. */
  verify(key: VerifyKey, message: Buffer, signature: Buffer): boolean;
}

const signatureBytes = 64;
/** RFC 8410's SubjectPublicKeyInfo for Ed25519: a 12-byte prefix, then the key's 32 bytes. */
const spkiPrefixBytes = 12;

/** The key in both forms; its SubjectPublicKeyInfo must be Ed25519's (parsePublicKey checks it). */
export function verifyKeyOf(key: KeyObject): VerifyKey {
  const der = key.export({ type: "spki", format: "der" });
  return { key, raw: Buffer.from(der.subarray(spkiPrefixBytes)) };
}

export const nodeVerifier: SignatureVerifier = {
  library: "node",
  verify(key, message, signature) {
    try {
      return signature.length === signatureBytes && crypto.verify(null, message, key.key, signature);
    } catch {
      return false;
    }
  },
};

function sodiumVerifier(sodium: Sodium): SignatureVerifier {
  return {
    library: "libsodium",
    verify(key, message, signature) {
      try {
        return (
          signature.length === signatureBytes &&
          key.raw.length === 32 &&
          sodium.crypto_sign_verify_detached(signature, message, key.raw)
        );
      } catch {
        return false;
      }
    },
  };
}

// RFC 8032, section 7.1, TEST 2 (one byte of message), and the same signature with its last byte
// changed: what a working build of libsodium must accept and refuse.
const knownKey = "3d4017c3e843895a92b70aa74d1b7ebc9c982ccf2ec4968cc0cd55f12af4660c";
const knownMessage = "72";
const knownSignature =
  "92a009a9f0d4cab8720e820b5f642540a2b27b5416503f8fb3762223ebdb69da" +
  "085ac1e43e15996e458f3613d0f11d8c387b2eaeb4302aeeb00d291612bb0c00";

function passesKnownAnswers(verifier: SignatureVerifier): boolean {
  const key = verifyKeyOf(
    crypto.createPublicKey({
      key: { kty: "OKP", crv: "Ed25519", x: Buffer.from(knownKey, "hex").toString("base64url") },
      format: "jwk",
    }),
  );
  const message = Buffer.from(knownMessage, "hex");
  const good = Buffer.from(knownSignature, "hex");
  const bad = Buffer.from(good);
  bad[signatureBytes - 1] = (bad[signatureBytes - 1] as number) ^ 0x01;
  return verifier.verify(key, message, good) && !verifier.verify(key, message, bad);
}

export type VerifierChoice = "auto" | VerifierLibrary;

/**
 * The verifier for `choice`: "node" is node:crypto; "libsodium" the add-on, or an error saying why
 * it cannot be had; "auto" the add-on when it loads and passes the known answers, else node:crypto,
 * with `fallbackReason` saying why. `load` is for tests (the add-on as a module would load it).
 */
export function chooseVerifier(
  choice: VerifierChoice,
  load: () => unknown = () => createRequire(import.meta.url)("sodium-native"),
): { verifier: SignatureVerifier; fallbackReason: string | null } {
  if (choice === "node") return { verifier: nodeVerifier, fallbackReason: null };
  let reason: string;
  try {
    const sodium = load() as Partial<Sodium> | null;
    if (typeof sodium?.crypto_sign_verify_detached !== "function") {
      reason = "sodium-native has no crypto_sign_verify_detached";
    } else {
      const verifier = sodiumVerifier(sodium as Sodium);
      if (passesKnownAnswers(verifier)) return { verifier, fallbackReason: null };
      reason = "sodium-native gave a wrong answer for RFC 8032's test vector";
    }
  } catch (error) {
    reason = `sodium-native could not be loaded (${error instanceof Error ? error.message.split("\n")[0] : String(error)})`;
  }
  if (choice === "libsodium") throw new Error(`SIGNATURE_VERIFIER=libsodium: ${reason}`);
  return { verifier: nodeVerifier, fallbackReason: reason };
}
