// The composition root picks the document store FILE_STORE names, and loads the S3 one only then.

import assert from "node:assert/strict";
import { test } from "node:test";
import { loadConfig } from "./config/config.ts";
import type { DatabaseHandle } from "./db/database.ts";
import { systemClock } from "./platform/clock.ts";
import { LocalFileStore } from "./platform/file-store.ts";
import { systemRandom } from "./platform/random.ts";
import { S3FileStore } from "./platform/s3-file-store.ts";
import { buildServices, openFileStore } from "./services.ts";

const s3Env = {
  FILE_STORE: "s3",
  S3_BUCKET: "kyc",
  S3_REGION: "eu-west-1",
  S3_ENDPOINT: "http://127.0.0.1:9",
};

test("FILE_STORE names the store: the data folder by default, the bucket with s3", async () => {
  assert.ok((await openFileStore(loadConfig({}))) instanceof LocalFileStore);
  const s3 = await openFileStore(loadConfig(s3Env));
  assert.ok(s3 instanceof S3FileStore);
  s3.close();
});

test("a configuration naming the bucket never falls back to the local folder", () => {
  assert.throws(
    () =>
      buildServices({
        config: loadConfig(s3Env),
        database: { db: null } as unknown as DatabaseHandle,
        clock: systemClock,
        random: systemRandom,
      }),
    /FILE_STORE=s3: open the store with openFileStore\(\) and pass it/,
  );
});
