// The S3 store beyond the contract: every way the bucket can misbehave ends, within the store's
// bounds, as a FileStoreUnavailableError (never a hang, never a crash, never "no such file" for a
// broken store), and the same store works again once the server is back. Against a real
// S3-compatible server (testing/s3-server.ts), and against fake endpoints for what a real one
// cannot be made to do (stall or cut an object's body).

import assert from "node:assert/strict";
import crypto from "node:crypto";
import http from "node:http";
import type net from "node:net";
import { after, before, describe, test } from "node:test";
import { startTestS3, type TestS3, testS3Credentials } from "../testing/s3-server.ts";
import { FileStoreUnavailableError } from "./file-store.ts";
import { S3FileStore } from "./s3-file-store.ts";

const newKey = () => crypto.randomBytes(32).toString("base64url");
/** Tight bounds, so that a stalled call is given up quickly. */
const tight = { connectMs: 500, attemptMs: 500, attemptsMax: 2, callMs: 1_500 };

function unavailable(what: string, pattern: RegExp = /./) {
  return (err: unknown) => {
    assert.ok(err instanceof FileStoreUnavailableError, `${what}: ${String(err)}`);
    assert.match(err.message, /^file store: /);
    assert.match(err.message, pattern);
    return true;
  };
}

describe("S3 store against a real S3-compatible server", () => {
  let s3: TestS3;
  before(async () => {
    s3 = await startTestS3("kyc-docs");
  });
  after(async () => {
    await s3?.close();
  });

  test("objects are stored under the service's key at the bucket's root, as opaque bytes", async () => {
    const store = s3.store();
    const key = newKey();
    await store.put(key, Buffer.from("%PDF-1.7 whatever"));
    assert.deepEqual(await s3.keys(), [key]);
    await store.delete(key);
    assert.deepEqual(await s3.keys(), []);
  });

  test("a server that accepts and never answers: each call gives up at its bound; the store recovers", async () => {
    const store = s3.store(tight);
    const key = newKey();
    await store.put(key, Buffer.from("before"));
    s3.pause();
    try {
      for (const [what, call] of [
        ["put", () => store.put(newKey(), Buffer.from("x"))],
        ["get", () => store.get(key)],
        ["delete", () => store.delete(key)],
      ] as const) {
        await assert.rejects(call(), unavailable(what, new RegExp(`^file store: ${what} `)));
      }
    } finally {
      s3.resume();
    }
    // The delete sent while paused may have been served on resume: the file is there or gone,
    // and the store answers either way.
    const back = await store.get(key);
    assert.ok(back === null || back.toString() === "before");
    await store.put(key, Buffer.from("after"));
    assert.equal((await store.get(key))?.toString(), "after");
    await s3.empty();
  });

  test("wrong credentials are a broken store, not a missing file", async () => {
    const store = new S3FileStore({
      bucket: "kyc-docs",
      region: "us-east-1",
      endpoint: s3.endpoint,
      forcePathStyle: true,
      credentials: { accessKeyId: testS3Credentials.accessKeyId, secretAccessKey: "not-the-secret" },
    });
    try {
      await assert.rejects(
        store.put(newKey(), Buffer.from("x")),
        unavailable("put", /SignatureDoesNotMatch/),
      );
      await assert.rejects(store.get(newKey()), unavailable("get", /SignatureDoesNotMatch/));
      assert.match((await store.check()) ?? "", /^file store: get failed \(SignatureDoesNotMatch\)/);
    } finally {
      store.close();
    }
    assert.deepEqual(await s3.keys(), []);
  });

  test("a missing bucket is a broken store, not a missing file", async () => {
    const store = new S3FileStore({
      bucket: "no-such-bucket",
      region: "us-east-1",
      endpoint: s3.endpoint,
      forcePathStyle: true,
      credentials: testS3Credentials,
    });
    try {
      await assert.rejects(store.get(newKey()), unavailable("get", /NoSuchBucket/));
      await assert.rejects(store.put(newKey(), Buffer.from("x")), unavailable("put", /NoSuchBucket/));
      assert.notEqual(await store.check(), null);
    } finally {
      store.close();
    }
    assert.equal(await s3.store().check(), null);
  });

  test("an object larger than any document is refused on reading, whatever put it there", async () => {
    const store = s3.store({ objectBytesMax: 1024 });
    const fits = newKey();
    const tooLarge = newKey();
    await s3.putRaw(fits, Buffer.alloc(1024, 1));
    await s3.putRaw(tooLarge, Buffer.alloc(1025, 1));
    assert.equal((await store.get(fits))?.length, 1024);
    await assert.rejects(store.get(tooLarge), unavailable("get"));
    await s3.empty();
  });

  test("a server that was stopped refuses connections: the store says so, bounded", async () => {
    const other = await startTestS3("short-lived");
    const store = other.store(tight);
    await store.put(newKey(), Buffer.from("x"));
    await other.close();
    await assert.rejects(store.get(newKey()), unavailable("get"));
    await assert.rejects(store.put(newKey(), Buffer.from("x")), unavailable("put"));
    store.close();
  });
});

describe("S3 store against endpoints that misbehave mid-answer", () => {
  /** An HTTP server whose answer to every request is `answer`; closed after the test. */
  async function fakeEndpoint(
    answer: (req: http.IncomingMessage, res: http.ServerResponse) => void,
  ): Promise<{ store: S3FileStore; close: () => Promise<void> }> {
    const sockets = new Set<net.Socket>();
    const server = http.createServer((req, res) => {
      req.resume();
      req.on("end", () => answer(req, res));
    });
    server.on("connection", (s) => {
      sockets.add(s);
      s.on("close", () => sockets.delete(s));
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const port = (server.address() as net.AddressInfo).port;
    const store = new S3FileStore({
      bucket: "kyc-docs",
      region: "us-east-1",
      endpoint: `http://127.0.0.1:${port}`,
      forcePathStyle: true,
      credentials: testS3Credentials,
      bounds: tight,
    });
    return {
      store,
      close: async () => {
        store.close();
        for (const s of sockets) s.destroy();
        await new Promise<void>((resolve) => server.close(() => resolve()));
      },
    };
  }

  const objectHeaders = (length: number) => ({
    "content-type": "application/octet-stream",
    "content-length": String(length),
    etag: '"0"',
  });

  test("an object whose body stops flowing is given up at the call's bound", async () => {
    const fake = await fakeEndpoint((_req, res) => {
      res.writeHead(200, objectHeaders(1000));
      res.write(Buffer.alloc(10));
    });
    try {
      await assert.rejects(fake.store.get(newKey()), unavailable("get", /within 1500 ms/));
    } finally {
      await fake.close();
    }
  });

  test("an object whose connection is cut half-way is an error, never a short file", async () => {
    const fake = await fakeEndpoint((_req, res) => {
      res.writeHead(200, objectHeaders(1000));
      res.write(Buffer.alloc(10), () => res.socket?.destroy());
    });
    try {
      await assert.rejects(fake.store.get(newKey()), unavailable("get"));
    } finally {
      await fake.close();
    }
  });

  test("answers that are not S3's (a proxy's HTML 502, an empty 500) are errors in our words", async () => {
    for (const [status, body] of [
      [502, "<html><body>Bad Gateway</body></html>"],
      [500, ""],
      [403, "<html>Forbidden</html>"],
    ] as const) {
      const fake = await fakeEndpoint((_req, res) => {
        res.writeHead(status, { "content-type": "text/html" });
        res.end(body);
      });
      try {
        await assert.rejects(fake.store.get(newKey()), unavailable(`get ${status}`));
        await assert.rejects(fake.store.put(newKey(), Buffer.from("x")), unavailable(`put ${status}`));
        await assert.rejects(fake.store.delete(newKey()), unavailable(`delete ${status}`));
      } finally {
        await fake.close();
      }
    }
  });
});
