// Stored files as a port: put, get and delete bytes by an opaque key. The service makes the keys
// (random, never derived from anything a partner sent), so no file name ever reaches the file
// system. The local implementation is the sandbox default (`<dataDir>/files`); the S3-compatible
// one (s3-file-store.ts) is the production store; tests may use the in-memory one. Every store
// passes the same contract (file-store.test.ts).

import crypto from "node:crypto";
import fs from "node:fs/promises";
import path from "node:path";

/**
 * Every method refuses a key that is not base64url text (an Error, before any I/O), and reports any
 * failure of the storage itself (disk, network, credentials, a timeout) as a
 * FileStoreUnavailableError, whose message is the store's own words and whose cause is kept for
 * the log only: the request is answered 503 (docs/errors.md).
 */
export interface FileStore {
  /** Stores `bytes` under `key`, replacing nothing: keys are fresh. */
  put(key: string, bytes: Uint8Array): Promise<void>;
  /** The bytes under `key`, or null when there are none. */
  get(key: string): Promise<Buffer | null>;
  /** Removes `key`; removing an absent key is not an error. */
  delete(key: string): Promise<void>;
}

/** The storage behind a FileStore failed or did not answer in time; a retry later may succeed. */
export class FileStoreUnavailableError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "FileStoreUnavailableError";
  }
}

/** Runs one storage operation; any failure but an invalid key becomes a FileStoreUnavailableError. */
async function storage<T>(what: string, work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (err) {
    if (err instanceof FileStoreUnavailableError) throw err;
    throw new FileStoreUnavailableError(`file store: ${what} failed`, { cause: err });
  }
}

/** Keys are base64url text; anything else (a slash, a dot) is refused before touching a path. */
const keyPattern = /^[A-Za-z0-9_-]{16,128}$/;

export function isFileKey(key: string): boolean {
  return keyPattern.test(key);
}

export function assertKey(key: string): void {
  if (!keyPattern.test(key)) throw new Error("invalid file key");
}

/**
 * Files under one folder, fanned out by the key's first two characters so that no directory grows
 * without bound. Writes go to a temporary name and are renamed into place, so a reader never sees
 * a half-written file. Folders are created on first use, mode 0700; files are 0600 (KYC data).
 */
export class LocalFileStore implements FileStore {
  readonly #root: string;

  constructor(root: string) {
    this.#root = root;
  }

  #pathOf(key: string): string {
    assertKey(key);
    return path.join(this.#root, key.slice(0, 2), key);
  }

  async put(key: string, bytes: Uint8Array): Promise<void> {
    const file = this.#pathOf(key);
    await storage("put", async () => {
      await fs.mkdir(path.dirname(file), { recursive: true, mode: 0o700 });
      const temporary = `${file}.${crypto.randomBytes(6).toString("hex")}.partial`;
      try {
        await fs.writeFile(temporary, bytes, { mode: 0o600, flag: "wx" });
        await fs.rename(temporary, file);
      } catch (err) {
        await fs.rm(temporary, { force: true }).catch(() => {});
        throw err;
      }
    });
  }

  async get(key: string): Promise<Buffer | null> {
    const file = this.#pathOf(key);
    return storage("get", async () => {
      try {
        return await fs.readFile(file);
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code === "ENOENT") return null;
        throw err;
      }
    });
  }

  async delete(key: string): Promise<void> {
    const file = this.#pathOf(key);
    await storage("delete", () => fs.rm(file, { force: true }));
  }
}

/** Files in memory, for tests that need no folder. */
export class MemoryFileStore implements FileStore {
  readonly #files = new Map<string, Buffer>();

  async put(key: string, bytes: Uint8Array): Promise<void> {
    assertKey(key);
    this.#files.set(key, Buffer.from(bytes));
  }

  async get(key: string): Promise<Buffer | null> {
    assertKey(key);
    const found = this.#files.get(key);
    return found === undefined ? null : Buffer.from(found);
  }

  async delete(key: string): Promise<void> {
    assertKey(key);
    this.#files.delete(key);
  }

  get size(): number {
    return this.#files.size;
  }
}
