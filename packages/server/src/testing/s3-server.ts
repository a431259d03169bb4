// A real S3-compatible server for tests: s3-server-main.ts in a child process, on 127.0.0.1 and a
// free port, with one bucket, in a temporary folder removed on close. The test gets the settings a
// `counterpart serve` process needs (`env`), stores on it, a client to look inside the bucket, and
// the means to make it misbehave: pause (accepts connections, answers nothing) and kill (refuses).

import { type ChildProcess, spawn } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { DeleteObjectCommand, PutObjectCommand, S3Client } from "@aws-sdk/client-s3";
import { type S3Bounds, S3FileStore } from "../platform/s3-file-store.ts";

/** s3rver's one account. */
export const testS3Credentials = { accessKeyId: "S3RVER", secretAccessKey: "S3RVER" } as const;
const region = "us-east-1";
const main = path.join(import.meta.dirname, "s3-server-main.ts");
const startMs = 30_000;
/** How s3rver names an object's bytes on disk. */
const objectSuffix = "._S3rver_object";

export interface TestS3 {
  readonly endpoint: string;
  readonly bucket: string;
  /** What a `counterpart serve` process needs to use this server (credentials through the SDK's variables). */
  readonly env: Record<string, string>;
  /** A store on the bucket (its own client; closed with the server). */
  store(bounds?: Partial<S3Bounds>): S3FileStore;
  /**
   * The bucket's keys, sorted, read from the server's folder: s3rver signs bucket-level requests
   * (ListObjects, HeadBucket) over the path without the SDK's trailing slash and refuses them, so
   * only object requests go through its API (they are all the service makes).
   */
  keys(): Promise<string[]>;
  /** Writes an object behind the service's back. */
  putRaw(key: string, bytes: Uint8Array): Promise<void>;
  /** Removes every object. */
  empty(): Promise<void>;
  /** SIGSTOP: connections are still accepted by the kernel, and nothing answers. */
  pause(): void;
  resume(): void;
  /** Kills the server and removes its folder; idempotent. */
  close(): Promise<void>;
}

export async function startTestS3(bucket = "counterpart-test"): Promise<TestS3> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "cp-s3-"));
  const bucketDir = path.join(dir, "data", bucket);
  const keys = (): string[] =>
    fs.existsSync(bucketDir)
      ? fs
          .readdirSync(bucketDir)
          .filter((name) => name.endsWith(objectSuffix))
          .map((name) => name.slice(0, -objectSuffix.length))
          .sort()
      : [];
  const child: ChildProcess = spawn(process.execPath, [main, path.join(dir, "data"), bucket], {
    stdio: ["pipe", "pipe", "pipe"],
  });
  let output = "";
  child.on("error", (err) => (output += `\nspawn error: ${err.message}`));
  child.stderr?.on("data", (c: Buffer) => (output += c.toString()));
  // The pipe to a server killed on purpose may report EPIPE; nothing to do about it.
  child.stdin?.on("error", () => {});
  const exited = new Promise<void>((resolve) => {
    if (child.exitCode !== null) resolve();
    child.once("exit", () => resolve());
    child.once("error", () => resolve());
  });
  const stores: S3FileStore[] = [];
  let client: S3Client | null = null;

  async function close(): Promise<void> {
    for (const s of stores) s.close();
    client?.destroy();
    if (child.exitCode === null && child.signalCode === null) {
      child.kill("SIGCONT");
      child.kill("SIGKILL");
      await exited;
    }
    fs.rmSync(dir, { recursive: true, force: true });
  }

  try {
    const port = await new Promise<number>((resolve, reject) => {
      let line = "";
      const timer = setTimeout(() => reject(new Error(`the S3 server did not start:${output}`)), startMs);
      child.stdout?.on("data", (c: Buffer) => {
        line += c.toString();
        const end = line.indexOf("\n");
        if (end < 0) return;
        clearTimeout(timer);
        try {
          resolve((JSON.parse(line.slice(0, end)) as { port: number }).port);
        } catch {
          reject(new Error(`the S3 server said: ${line}${output}`));
        }
      });
      void exited.then(() => {
        clearTimeout(timer);
        reject(new Error(`the S3 server exited:${output}`));
      });
    });
    const endpoint = `http://127.0.0.1:${port}`;
    const s3 = new S3Client({ region, endpoint, forcePathStyle: true, credentials: testS3Credentials });
    client = s3;
    return {
      endpoint,
      bucket,
      env: {
        FILE_STORE: "s3",
        S3_BUCKET: bucket,
        S3_REGION: region,
        S3_ENDPOINT: endpoint,
        S3_FORCE_PATH_STYLE: "true",
        AWS_ACCESS_KEY_ID: testS3Credentials.accessKeyId,
        AWS_SECRET_ACCESS_KEY: testS3Credentials.secretAccessKey,
      },
      store(bounds) {
        const store = new S3FileStore({
          bucket,
          region,
          endpoint,
          forcePathStyle: true,
          credentials: testS3Credentials,
          ...(bounds === undefined ? {} : { bounds }),
        });
        stores.push(store);
        return store;
      },
      keys: async () => keys(),
      async putRaw(key, bytes) {
        await s3.send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: bytes }));
      },
      async empty() {
        for (const key of keys()) await s3.send(new DeleteObjectCommand({ Bucket: bucket, Key: key }));
      },
      pause: () => void child.kill("SIGSTOP"),
      resume: () => void child.kill("SIGCONT"),
      close,
    };
  } catch (err) {
    await close();
    throw err;
  }
}
