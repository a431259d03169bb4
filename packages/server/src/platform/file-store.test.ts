// The file store port: bytes back exactly, absent keys, keys that are not base64url refused before
// any path is built, files private to the service's user.

import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, describe, test } from "node:test";
import { type FileStore, LocalFileStore, MemoryFileStore } from "./file-store.ts";

const root = fs.mkdtempSync(path.join(os.tmpdir(), "cp-file-store-"));
after(() => fs.rmSync(root, { recursive: true, force: true }));

const stores: [string, () => FileStore][] = [
  ["local", () => new LocalFileStore(path.join(root, "files"))],
  ["memory", () => new MemoryFileStore()],
];

for (const [name, make] of stores) {
  describe(`${name} file store`, () => {
    const store = make();
    const key = "AbCdEfGhIjKlMnOpQrStUvWxYz0123456789-_abcde";

    test("put, get, delete; an absent key reads as null; deleting it again is no error", async () => {
      const bytes = Buffer.from([0, 1, 2, 255, 254]);
      await store.put(key, bytes);
      assert.deepEqual(await store.get(key), bytes);
      await store.delete(key);
      assert.equal(await store.get(key), null);
      await store.delete(key);
      assert.equal(await store.get("Zz".repeat(20)), null);
    });

    test("keys that could name a path are refused", async () => {
      for (const bad of ["../../etc/passwd", "a/b", "short", "x".repeat(129), "key.png", "", "ke y"]) {
        await assert.rejects(store.put(bad, Buffer.from("x")), /invalid file key/, bad);
        await assert.rejects(store.get(bad), /invalid file key/, bad);
      }
    });
  });
}

test("local files are written whole, readable by the service's user only, fanned out by key prefix", async () => {
  const store = new LocalFileStore(path.join(root, "private"));
  const key = "QrStUvWxYz0123456789AbCdEfGhIjKlMnOp-_abcde";
  await store.put(key, Buffer.alloc(10_000, 7));
  const file = path.join(root, "private", "Qr", key);
  assert.equal(fs.statSync(file).mode & 0o777, 0o600);
  assert.equal(fs.statSync(path.dirname(file)).mode & 0o777, 0o700);
  assert.deepEqual(fs.readdirSync(path.dirname(file)), [key]);
});
