import assert from "node:assert/strict";
import crypto from "node:crypto";
import { test } from "node:test";
import { chooseVerifier, nodeVerifier, type SignatureVerifier, verifyKeyOf } from "./signature-verifier.ts";

const sodium = chooseVerifier("libsodium").verifier;
const verifiers: readonly SignatureVerifier[] = [sodium, nodeVerifier];

function keyFromRaw(hex: string) {
  return verifyKeyOf(
    crypto.createPublicKey({
      key: { kty: "OKP", crv: "Ed25519", x: Buffer.from(hex, "hex").toString("base64url") },
      format: "jwk",
    }),
  );
}

// RFC 8032, section 7.1: TEST 1 (no message), TEST 3 (two bytes), TEST SHA(abc) (64 bytes).
const vectors = [
  {
    key: "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a",
    message: "",
    signature:
      "e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e065224901555fb8821590a33bacc61e39701cf9b46bd25bf5f0595bbe24655141438e7a100b",
  },
  {
    key: "fc51cd8e6218a1a38da47ed00230f0580816ed13ba3303ac5deb911548908025",
    message: "af82",
    signature:
      "6291d657deec24024827e69c3abe01a30ce548a284743a445e3680d7db5ac3ac18ff9b538d16f290ae67f760984dc6594a7c15e9716ed28dc027beceea1ec40a",
  },
  {
    key: "ec172b93ad5e563bf4932c70e1245034c35467ef2efd4d64ebf819683467e2bf",
    message:
      "ddaf35a193617abacc417349ae20413112e6fa4e89a97ea20a9eeee64b55d39a2192992a274fc1a836ba3c23a3feebbd454d4423643ce80e2a9ac94fa54ca49f",
    signature:
      "dc2a4459e7369633a52b1bf277839a00201009a3efbf3ecb69bea2186c26b58909351fc9ac90b3ecfdfbc7c66431e0303dca179c138ac17ad9bef1177331a704",
  },
];

test("libsodium is what this platform verifies with, as SIGNATURE_VERIFIER's default chooses", () => {
  assert.equal(sodium.library, "libsodium");
  const auto = chooseVerifier("auto");
  assert.equal(auto.verifier.library, "libsodium");
  assert.equal(auto.fallbackReason, null);
  assert.equal(chooseVerifier("node").verifier.library, "node");
});

test("both libraries accept RFC 8032's test vectors and refuse each with a byte changed", () => {
  for (const v of vectors) {
    const key = keyFromRaw(v.key);
    const message = Buffer.from(v.message, "hex");
    const signature = Buffer.from(v.signature, "hex");
    for (const verifier of verifiers) {
      assert.equal(verifier.verify(key, message, signature), true, `${verifier.library} ${v.key}`);
      for (const at of [0, 31, 32, 63]) {
        const changed = Buffer.from(signature);
        changed[at] = (changed[at] as number) ^ 0x40;
        assert.equal(verifier.verify(key, message, changed), false, `${verifier.library} byte ${at}`);
      }
      const otherMessage = Buffer.concat([message, Buffer.from([0])]);
      assert.equal(verifier.verify(key, otherMessage, signature), false, verifier.library);
      assert.equal(
        verifier.verify(
          keyFromRaw(vectors[0]!.key === v.key ? vectors[1]!.key : vectors[0]!.key),
          message,
          signature,
        ),
        false,
      );
    }
  }
});

test("the two libraries give the same answer on fresh keys, true and altered signatures", () => {
  for (let i = 0; i < 300; i++) {
    const pair = crypto.generateKeyPairSync("ed25519");
    const key = verifyKeyOf(pair.publicKey);
    const message = crypto.randomBytes(i % 97);
    const signature = crypto.sign(null, message, pair.privateKey);
    assert.equal(sodium.verify(key, message, signature), true);
    assert.equal(nodeVerifier.verify(key, message, signature), true);
    const altered = Buffer.from(signature);
    const bit = i % 512;
    altered[bit >> 3] = (altered[bit >> 3] as number) ^ (1 << (bit & 7));
    assert.equal(sodium.verify(key, message, altered), false, `bit ${bit}`);
    assert.equal(nodeVerifier.verify(key, message, altered), false, `bit ${bit}`);
  }
});

test("a signature whose S is not reduced (S + L) is refused by both", () => {
  const v = vectors[1]!;
  const key = keyFromRaw(v.key);
  const message = Buffer.from(v.message, "hex");
  const signature = Buffer.from(v.signature, "hex");
  // L = 2^252 + 27742317777372353535851937790883648493, little-endian.
  const order = 2n ** 252n + 27742317777372353535851937790883648493n;
  let s = 0n;
  for (let i = 63; i >= 32; i--) s = (s << 8n) | BigInt(signature[i] as number);
  let unreduced = s + order;
  const malleated = Buffer.from(signature);
  for (let i = 32; i < 64; i++) {
    malleated[i] = Number(unreduced & 0xffn);
    unreduced >>= 8n;
  }
  for (const verifier of verifiers)
    assert.equal(verifier.verify(key, message, malleated), false, verifier.library);
});

test("a signature of the wrong length, and a key of the wrong length, are refusals, never throws", () => {
  const v = vectors[0]!;
  const key = keyFromRaw(v.key);
  const signature = Buffer.from(v.signature, "hex");
  for (const verifier of verifiers) {
    assert.equal(verifier.verify(key, Buffer.alloc(0), signature.subarray(0, 63)), false);
    assert.equal(verifier.verify(key, Buffer.alloc(0), Buffer.concat([signature, Buffer.alloc(1)])), false);
    assert.equal(verifier.verify(key, Buffer.alloc(0), Buffer.alloc(0)), false);
  }
  assert.equal(
    sodium.verify({ key: key.key, raw: key.raw.subarray(0, 31) }, Buffer.alloc(0), signature),
    false,
  );
});

test("auto falls back to node:crypto, saying why, when the add-on is missing, broken or wrong", () => {
  const missing = chooseVerifier("auto", () => {
    throw new Error("Cannot find module 'sodium-native'\nRequire stack: …");
  });
  assert.equal(missing.verifier.library, "node");
  assert.equal(
    missing.fallbackReason,
    "sodium-native could not be loaded (Cannot find module 'sodium-native')",
  );

  const empty = chooseVerifier("auto", () => ({}));
  assert.equal(empty.verifier.library, "node");
  assert.match(empty.fallbackReason ?? "", /no crypto_sign_verify_detached/);

  // An add-on that accepts everything fails the known answers.
  const yes = chooseVerifier("auto", () => ({ crypto_sign_verify_detached: () => true }));
  assert.equal(yes.verifier.library, "node");
  assert.match(yes.fallbackReason ?? "", /wrong answer/);
  const no = chooseVerifier("auto", () => ({ crypto_sign_verify_detached: () => false }));
  assert.equal(no.verifier.library, "node");

  assert.throws(
    () => chooseVerifier("libsodium", () => ({ crypto_sign_verify_detached: () => true })),
    /SIGNATURE_VERIFIER=libsodium: sodium-native gave a wrong answer/,
  );
  assert.throws(
    () =>
      chooseVerifier("libsodium", () => {
        throw new Error("no prebuilt binary for this platform");
      }),
    /SIGNATURE_VERIFIER=libsodium: sodium-native could not be loaded \(no prebuilt binary/,
  );
});

test("an add-on that throws while verifying is a refusal", () => {
  let calls = 0;
  const { verifier } = chooseVerifier("libsodium", () => ({
    crypto_sign_verify_detached: (signature: Uint8Array, message: Uint8Array, key: Uint8Array) => {
      calls++;
      if (calls > 2) throw new TypeError("boom");
      return nodeVerifier.verify(
        verifyKeyOf(
          crypto.createPublicKey({
            key: { kty: "OKP", crv: "Ed25519", x: Buffer.from(key).toString("base64url") },
            format: "jwk",
          }),
        ),
        Buffer.from(message),
        Buffer.from(signature),
      );
    },
  }));
  const v = vectors[0]!;
  assert.equal(verifier.verify(keyFromRaw(v.key), Buffer.alloc(0), Buffer.from(v.signature, "hex")), false);
});
