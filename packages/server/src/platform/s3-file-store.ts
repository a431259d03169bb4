// The file store on an S3-compatible bucket (FILE_STORE=s3; docs/operations.md, "Document
// storage"), through the AWS SDK. Objects are named by the service's own random keys, at the
// bucket's root, and are written as opaque bytes (`application/octet-stream`): the detected
// format lives in the database, never in the bucket.
//
// Every call is bounded three ways (config/limits.ts): the connection, each attempt, and the whole
// call (the SDK's retries and the reading of the object included), after which the call is
// abandoned and its request aborted. Whatever goes wrong (refused, timed out, throttled past the
// retries, a 5xx, bad credentials, a missing bucket, an object larger than any document) is a
// FileStoreUnavailableError in our words, with the SDK's error as its cause for the log; only
// `NoSuchKey` on a read means "no such file". Nothing here can end the process: every stream has
// its error handled and every promise is awaited or caught.

import { Readable } from "node:stream";
import { DeleteObjectCommand, GetObjectCommand, PutObjectCommand, S3Client } from "@aws-sdk/client-s3";
import { limits } from "../config/limits.ts";
import { assertKey, type FileStore, FileStoreUnavailableError } from "./file-store.ts";

export interface S3Bounds {
  connectMs: number;
  attemptMs: number;
  attemptsMax: number;
  callMs: number;
  /** A stored object longer than this is refused on reading (it cannot be one of ours). */
  objectBytesMax: number;
}

export interface S3FileStoreOptions {
  bucket: string;
  region: string;
  /** null: AWS's own endpoint for the region. */
  endpoint: string | null;
  forcePathStyle: boolean;
  /**
   * Explicit credentials (tests). Without them the SDK's default provider chain finds them: the
   * AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY / AWS_SESSION_TOKEN variables, a profile, a web
   * identity token, the container or instance role.
   */
  credentials?: { accessKeyId: string; secretAccessKey: string; sessionToken?: string };
  /** Tighter bounds (tests); config/limits.ts by default. */
  bounds?: Partial<S3Bounds>;
}

const defaultBounds: S3Bounds = {
  connectMs: limits.fileStoreConnectMs,
  attemptMs: limits.fileStoreAttemptMs,
  attemptsMax: limits.fileStoreAttemptsMax,
  callMs: limits.fileStoreCallMs,
  objectBytesMax: limits.documentFileBytesMax,
};

/** The key `check()` reads: never one of the service's. */
const checkKey = "counterpart-start-check";

/** The SDK's error name, when the service answered one. */
function errorName(err: unknown): string | null {
  return err instanceof Error ? err.name : null;
}

export class S3FileStore implements FileStore {
  readonly #client: S3Client;
  readonly #bucket: string;
  readonly #bounds: S3Bounds;

  constructor(options: S3FileStoreOptions) {
    this.#bucket = options.bucket;
    this.#bounds = { ...defaultBounds, ...options.bounds };
    const agent = { keepAlive: true, maxSockets: 50 };
    this.#client = new S3Client({
      region: options.region,
      ...(options.endpoint === null ? {} : { endpoint: options.endpoint }),
      forcePathStyle: options.forcePathStyle,
      ...(options.credentials === undefined ? {} : { credentials: options.credentials }),
      maxAttempts: this.#bounds.attemptsMax,
      requestHandler: {
        connectionTimeout: this.#bounds.connectMs,
        requestTimeout: this.#bounds.attemptMs,
        throwOnRequestTimeout: true,
        httpAgent: agent,
        httpsAgent: agent,
      },
    });
  }

  /**
   * Runs one SDK call under the whole-call bound. Past it the call's signal is aborted (which
   * stops the request and any object being read) and the caller gets a FileStoreUnavailableError
   * at once, whatever the SDK is still doing (resolving credentials, backing off between attempts).
   */
  async #call<T>(what: string, work: (signal: AbortSignal) => Promise<T>): Promise<T> {
    const controller = new AbortController();
    let timer: NodeJS.Timeout | undefined;
    const expired = new Promise<never>((_resolve, reject) => {
      timer = setTimeout(() => {
        reject(
          new FileStoreUnavailableError(`file store: ${what} got no answer within ${this.#bounds.callMs} ms`),
        );
        controller.abort();
      }, this.#bounds.callMs);
    });
    const attempt = work(controller.signal);
    // Should the bound win, the abandoned call's own failure is expected and ignored.
    attempt.catch(() => {});
    try {
      return await Promise.race([attempt, expired]);
    } catch (err) {
      if (err instanceof FileStoreUnavailableError) throw err;
      const name = errorName(err);
      throw new FileStoreUnavailableError(
        `file store: ${what} failed${name === null || name === "Error" ? "" : ` (${name})`}`,
        { cause: err },
      );
    } finally {
      clearTimeout(timer);
    }
  }

  async put(key: string, bytes: Uint8Array): Promise<void> {
    assertKey(key);
    await this.#call("put", (abortSignal) =>
      this.#client.send(
        new PutObjectCommand({
          Bucket: this.#bucket,
          Key: key,
          Body: bytes,
          ContentLength: bytes.length,
          ContentType: "application/octet-stream",
        }),
        { abortSignal },
      ),
    );
  }

  async get(key: string): Promise<Buffer | null> {
    assertKey(key);
    return this.#call("get", async (abortSignal) => {
      let body: unknown;
      let length: number | undefined;
      try {
        const out = await this.#client.send(new GetObjectCommand({ Bucket: this.#bucket, Key: key }), {
          abortSignal,
        });
        body = out.Body;
        length = out.ContentLength;
      } catch (err) {
        // Only the key's absence is "no file"; a missing bucket (also a 404) is a broken store.
        if (errorName(err) === "NoSuchKey") return null;
        throw err;
      }
      if (!(body instanceof Readable)) throw new Error("the object came without a readable body");
      return readBounded(body, length, this.#bounds.objectBytesMax, abortSignal);
    });
  }

  async delete(key: string): Promise<void> {
    assertKey(key);
    // S3 answers 204 whether or not the key existed.
    await this.#call("delete", (abortSignal) =>
      this.#client.send(new DeleteObjectCommand({ Bucket: this.#bucket, Key: key }), { abortSignal }),
    );
  }

  /**
   * Whether the bucket answers these credentials as the service needs, for the start-up log: null
   * when it does, else what went wrong, in our words. It reads a key the service never makes
   * (its keys are 43 characters): "no such key" is the answer expected, and needs what a lost
   * file's 404 needs (read access, and the right to list, without which S3 answers 403 instead).
   */
  async check(): Promise<string | null> {
    try {
      await this.get(checkKey);
      return null;
    } catch (err) {
      return err instanceof Error ? err.message : "file store: check failed";
    }
  }

  /** Closes the client's idle connections. */
  close(): void {
    this.#client.destroy();
  }
}

/**
 * The whole body, refused past `max` bytes (announced or read), and stopped when `signal` aborts.
 * The stream is always consumed or destroyed, and its errors end up in the returned promise.
 */
async function readBounded(
  body: Readable,
  announced: number | undefined,
  max: number,
  signal: AbortSignal,
): Promise<Buffer> {
  if (announced !== undefined && announced > max) {
    body.destroy();
    throw new Error(`the object is ${announced} bytes, more than any document`);
  }
  const onAbort = () => body.destroy(new Error("aborted"));
  if (signal.aborted) onAbort();
  signal.addEventListener("abort", onAbort, { once: true });
  try {
    const chunks: Buffer[] = [];
    let total = 0;
    for await (const chunk of body) {
      const piece = Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk as Uint8Array);
      total += piece.length;
      if (total > max) {
        body.destroy();
        throw new Error(`the object is more than ${max} bytes`);
      }
      chunks.push(piece);
    }
    if (announced !== undefined && total !== announced) {
      throw new Error(`the object was cut: ${total} of ${announced} bytes`);
    }
    return Buffer.concat(chunks, total);
  } finally {
    signal.removeEventListener("abort", onAbort);
  }
}
