// The file store contract, passed by every store: the local folder, the in-memory one, and the S3
// store against a real S3-compatible server started here (testing/s3-server.ts). Bytes come back
// exactly, absent keys read as null, keys that are not base64url are refused before any I/O, and a
// store whose storage fails says so as a FileStoreUnavailableError in its own words.

import assert from "node:assert/strict";
import crypto from "node:crypto";
import fs from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { limits } from "../config/limits.ts";
import { startTestS3, type TestS3 } from "../testing/s3-server.ts";
import { type FileStore, FileStoreUnavailableError, LocalFileStore, MemoryFileStore } from "./file-store.ts";
import { S3FileStore } from "./s3-file-store.ts";

const root = fs.mkdtempSync(path.join(os.tmpdir(), "cp-file-store-"));
after(() => fs.rmSync(root, { recursive: true, force: true }));

let s3: TestS3 | undefined;
before(async () => {
  s3 = await startTestS3();
});
after(async () => {
  await s3?.close();
});

/** A port on which nothing listens (bound, then released). */
async function closedPort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as net.AddressInfo).port;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

interface Kind {
  name: string;
  make: () => FileStore;
  /** A store of this kind whose storage cannot work (none for the in-memory store). */
  broken?: () => Promise<FileStore>;
}

const kinds: Kind[] = [
  {
    name: "local",
    make: () => new LocalFileStore(path.join(root, "files")),
    // Its folder is a file: every operation fails in the file system.
    broken: async () => {
      const file = path.join(root, "not-a-folder");
      fs.writeFileSync(file, "x");
      return new LocalFileStore(file);
    },
  },
  { name: "memory", make: () => new MemoryFileStore() },
  {
    name: "s3",
    make: () => s3!.store(),
    // Nothing listens at its endpoint: every connection is refused, through the SDK's retries.
    broken: async () =>
      new S3FileStore({
        bucket: "counterpart-test",
        region: "us-east-1",
        endpoint: `http://127.0.0.1:${await closedPort()}`,
        forcePathStyle: true,
        credentials: { accessKeyId: "S3RVER", secretAccessKey: "S3RVER" },
        bounds: { attemptsMax: 2 },
      }),
  },
];

const newKey = () => crypto.randomBytes(32).toString("base64url");
const badKeys = [
  "../../etc/passwd",
  "a/b",
  "short",
  "x".repeat(129),
  "key.png",
  "",
  "ke y",
  "%2e%2e%2fetc%2fpasswd00",
];

for (const kind of kinds) {
  describe(`${kind.name} file store: the contract`, () => {
    let store: FileStore;
    before(() => {
      store = kind.make();
    });

    test("put, get, delete; an absent key reads as null; deleting it again is no error", async () => {
      const key = newKey();
      const bytes = Buffer.from([0, 1, 2, 255, 254]);
      await store.put(key, bytes);
      assert.deepEqual(await store.get(key), bytes);
      await store.delete(key);
      assert.equal(await store.get(key), null);
      await store.delete(key);
      assert.equal(await store.get(newKey()), null);
    });

    test("every byte value, one byte, and the largest document come back exactly", async () => {
      const all = Buffer.from(Array.from({ length: 256 }, (_, i) => i));
      const one = Buffer.from([0x0a]);
      const largest = crypto.randomBytes(limits.documentFileBytesMax);
      for (const bytes of [all, one, largest]) {
        const key = newKey();
        await store.put(key, bytes);
        const back = await store.get(key);
        assert.ok(back?.equals(bytes), `${bytes.length} bytes`);
        await store.delete(key);
      }
    });

    test("puts and reads of different keys at once do not mix", async () => {
      const files = Array.from({ length: 8 }, (_, i) => ({
        key: newKey(),
        bytes: crypto.randomBytes(1000 + i),
      }));
      await Promise.all(files.map((f) => store.put(f.key, f.bytes)));
      const back = await Promise.all(files.map((f) => store.get(f.key)));
      for (const [i, b] of back.entries()) assert.ok(b?.equals(files[i]!.bytes), `file ${i}`);
      await Promise.all(files.map((f) => store.delete(f.key)));
      assert.deepEqual(
        await Promise.all(files.map((f) => store.get(f.key))),
        files.map(() => null),
      );
    });

    test("keys that could name a path are refused before any I/O, by every method", async () => {
      for (const bad of badKeys) {
        for (const call of [
          () => store.put(bad, Buffer.from("x")),
          () => store.get(bad),
          () => store.delete(bad),
        ]) {
          await assert.rejects(
            call(),
            (err: unknown) =>
              err instanceof Error &&
              !(err instanceof FileStoreUnavailableError) &&
              /invalid file key/.test(err.message),
            bad,
          );
        }
      }
    });

    if (kind.broken !== undefined) {
      const makeBroken = kind.broken;
      test("storage that fails is a FileStoreUnavailableError in the store's words, for every method", async () => {
        const broken = await makeBroken();
        const key = newKey();
        for (const [what, call] of [
          ["put", () => broken.put(key, Buffer.from("x"))],
          ["get", () => broken.get(key)],
          ["delete", () => broken.delete(key)],
        ] as const) {
          await assert.rejects(call(), (err: unknown) => {
            assert.ok(err instanceof FileStoreUnavailableError, `${what}: ${String(err)}`);
            assert.match(err.message, new RegExp(`^file store: ${what} `));
            assert.ok(err.cause !== undefined, `${what}: the cause is kept for the log`);
            return true;
          });
        }
        if (broken instanceof S3FileStore) broken.close();
      });
    }
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
