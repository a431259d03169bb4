// The target of the attack suite: real `counterpart serve` processes reached over real HTTP, as a
// partner with a valid key would reach them. On PGlite (`npm test`) one process with its own data
// folder; on PostgreSQL (`npm run test:pg`, TEST_DATABASE_URL set) two processes sharing one fresh
// database, so replays can be sent to the other process. Requests are written byte for byte on a
// socket (`raw`), so a test controls the request line, every header and the body exactly.
//
// Every case checks two things: the exact answer, and that nothing changed. `snapshot()` reads the
// state back through the API (every client, balance, order and document of both partners), lists
// the stored files on disk, and on PostgreSQL also counts the rows in the database.

import assert from "node:assert/strict";
import crypto, { type KeyObject } from "node:crypto";
import fs from "node:fs";
import net from "node:net";
import path from "node:path";
import zlib from "node:zlib";
import { canonicalPath, canonicalString, generateKeyPair } from "@counterpart/protocol";
import pg from "pg";
import { type DatabaseHandle, openDatabase } from "../../packages/server/src/db/database.ts";
import { clientPayload } from "../../packages/server/src/testing/fixtures.ts";
import { testDatabaseUrl } from "../../packages/server/src/testing/harness.ts";
import { moneyState } from "../../packages/server/src/testing/money-state.ts";
import { proseOf } from "../../packages/server/src/testing/openapi-fuzz.ts";
import {
  type ServiceProcess,
  startService,
  tempDataDir,
} from "../../packages/server/src/testing/processes.ts";

export const onPostgres = testDatabaseUrl !== null;
export const adminToken = "attack-suite-admin-token-0123456789";
export const fileUrlSecret = "attack-suite-file-url-secret-0123456789abcdef";

/** How long any one request may take before the test fails instead of hanging. */
export const requestTimeoutMs = 15_000;

/** A machine under load can take long to start a process: migrations, seed, PGlite. */
const startTimeoutMs = 120_000;

export interface Partner {
  id: string;
  privateKey: KeyObject;
  publicKeyPem: string;
}

export interface RawResponse {
  status: number;
  /** Header names in lower case; a repeated header keeps its last value. */
  headers: Record<string, string>;
  text: string;
  /** The parsed body, or undefined when it is not JSON. */
  json: unknown;
  /** Milliseconds from the first byte written to the full response. */
  elapsedMs: number;
}

export interface SignOptions {
  partner?: Partner;
  method: string;
  /** The request target, exactly as it goes on the request line. */
  target: string;
  /** An object is sent as JSON; a string or a Buffer byte for byte. */
  body?: unknown;
  /** Content-Type; application/json when a body is given. */
  contentType?: string | null;
  /** The signing time; now by default. */
  timestampMs?: number;
  /** What is signed as the path instead of the target's canonical path. */
  signedPath?: string;
  /** What is signed as the method instead of `method`. */
  signedMethod?: string;
  /** What is hashed as the body instead of the bytes sent. */
  signedBody?: Buffer | string;
  /** Which process serves the request (modulo their number); 0 by default. */
  via?: number;
  /** Header overrides: a value replaces the signed header, null drops it. */
  headers?: Record<string, string | null>;
  /** Extra header lines, sent after the others as given (duplicates allowed). */
  extraHeaders?: [string, string][];
}

export interface SignedRequest {
  /** The request's bytes, ready for `raw`. */
  bytes: Buffer;
  timestamp: string;
  signature: string;
  via: number;
}

export interface Snapshot {
  api: string;
  files: string;
  db: string;
}

export interface Target {
  readonly description: string;
  readonly processes: ServiceProcess[];
  readonly a: Partner;
  readonly b: Partner;
  /** The database handle on PostgreSQL; null on PGlite (the process owns it). */
  readonly db: DatabaseHandle["db"] | null;
  /** host:port of each process's partner listener. */
  address(via?: number): { host: string; port: number };
  adminUrl: string;
  admin(method: string, url: string, body?: unknown): Promise<RawResponse>;
  newPartner(options?: { allowedIps?: string[]; name?: string }): Promise<Partner>;
  sign(o: SignOptions): SignedRequest;
  /** Signs and sends; the answer. */
  call(o: SignOptions): Promise<RawResponse>;
  /** Sends the bytes of a request to a process. */
  raw(bytes: Buffer | string, via?: number, timeoutMs?: number, halfClose?: boolean): Promise<RawResponse>;
  /** Creates a verified client for the partner through the API. */
  createClient(partner: Partner, n: number): Promise<{ id: number; partnerClientId: string }>;
  deposit(partner: Partner, partnerClientId: string, amount: string, ref: string): Promise<RawResponse>;
  snapshot(): Promise<Snapshot>;
  /** What the processes wrote, for failure messages. */
  logs(): string;
  close(): Promise<void>;
}

/** The bytes of one HTTP/1.1 request; Host, Content-Length and Connection: close are added. */
export function httpRequest(
  method: string,
  target: string,
  headers: [string, string][],
  body: Buffer | string | undefined,
  host: string,
): Buffer {
  const bytes = body === undefined ? Buffer.alloc(0) : Buffer.from(body);
  const names = new Set(headers.map(([n]) => n.toLowerCase()));
  const lines = [`${method} ${target} HTTP/1.1`];
  if (!names.has("host")) lines.push(`Host: ${host}`);
  for (const [n, v] of headers) lines.push(`${n}: ${v}`);
  if (
    !names.has("content-length") &&
    !names.has("transfer-encoding") &&
    (body !== undefined || method !== "GET")
  )
    lines.push(`Content-Length: ${bytes.length}`);
  if (!names.has("connection")) lines.push("Connection: close");
  return Buffer.concat([Buffer.from(`${lines.join("\r\n")}\r\n\r\n`, "latin1"), bytes]);
}

/** Parses one HTTP response; null while it is incomplete. */
function parseResponse(data: Buffer, ended: boolean): Omit<RawResponse, "elapsedMs"> | null {
  const end = data.indexOf("\r\n\r\n");
  if (end === -1) return null;
  const head = data.subarray(0, end).toString("latin1").split("\r\n");
  const status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(head[0] ?? "")?.[1] ?? "0");
  const headers: Record<string, string> = {};
  for (const line of head.slice(1)) {
    const colon = line.indexOf(":");
    if (colon > 0) headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
  }
  let body = data.subarray(end + 4);
  if (headers["content-length"] !== undefined) {
    const length = Number(headers["content-length"]);
    if (body.length < length) return null;
    body = body.subarray(0, length);
  } else if (/chunked/i.test(headers["transfer-encoding"] ?? "")) {
    const out: Buffer[] = [];
    let at = 0;
    for (;;) {
      const lineEnd = body.indexOf("\r\n", at);
      if (lineEnd === -1) return ended ? finish(Buffer.concat(out)) : null;
      const size = Number.parseInt(body.subarray(at, lineEnd).toString("latin1"), 16);
      if (size === 0) break;
      if (body.length < lineEnd + 2 + size + 2) return ended ? finish(Buffer.concat(out)) : null;
      out.push(body.subarray(lineEnd + 2, lineEnd + 2 + size));
      at = lineEnd + 2 + size + 2;
    }
    body = Buffer.concat(out);
  } else if (!ended && status !== 204 && status !== 304) {
    return null;
  }
  return finish(body);

  function finish(b: Buffer) {
    const text = b.toString("utf8");
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch {
      json = undefined;
    }
    return { status, headers, text, json };
  }
}

/**
 * Writes `bytes` on a fresh connection and reads one response. Bounded by `timeoutMs`; a
 * connection closed without an answer resolves with status 0.
 */
export function rawExchange(
  address: { host: string; port: number },
  bytes: Buffer | string,
  timeoutMs = requestTimeoutMs,
  /** Ends our side of the connection after the bytes (a client that stops sending). */
  halfClose = false,
): Promise<RawResponse> {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const socket = net.connect(address.port, address.host);
    let data = Buffer.alloc(0);
    let done = false;
    const timer = setTimeout(() => {
      settle(() =>
        reject(
          new Error(
            `no complete answer within ${timeoutMs} ms; got ${JSON.stringify(data.toString("latin1").slice(0, 300))}`,
          ),
        ),
      );
    }, timeoutMs);
    function settle(f: () => void) {
      if (done) return;
      done = true;
      clearTimeout(timer);
      socket.destroy();
      f();
    }
    const tryParse = (ended: boolean) => {
      const parsed = parseResponse(data, ended);
      if (parsed !== null) settle(() => resolve({ ...parsed, elapsedMs: performance.now() - started }));
      else if (ended) {
        settle(() =>
          resolve({
            status: 0,
            headers: {},
            text: data.toString("latin1"),
            json: undefined,
            elapsedMs: performance.now() - started,
          }),
        );
      }
    };
    socket.on("data", (chunk: Buffer) => {
      data = Buffer.concat([data, chunk]);
      tryParse(false);
    });
    socket.on("end", () => tryParse(true));
    socket.on("close", () => tryParse(true));
    // A server that answers before reading everything may reset while we still write.
    socket.on("error", () => tryParse(true));
    if (halfClose) socket.end(bytes);
    else socket.write(bytes);
  });
}

const libraryText =
  /node_modules|\bat [\w.<>]+ \(|Error:|SyntaxError|TypeError|FST_|Unexpected (token|end)|JSON at position|in JSON|ajv|fastify|busboy|kysely|pglite|postgres|stack/i;

/** No stack trace, parser or library message in an answer. */
export function assertNoLibraryText(res: RawResponse): void {
  assert.doesNotMatch(
    proseOf(res.text),
    libraryText,
    `library text in the answer: ${res.text.slice(0, 500)}`,
  );
}

export function assertJsonAnswer(res: RawResponse): void {
  assert.match(
    res.headers["content-type"] ?? "",
    /^application\/json/,
    `content type of ${res.text.slice(0, 200)}`,
  );
  assertNoLibraryText(res);
}

const messages: Record<number, string> = {
  400: "Bad Request",
  401: "Unauthorized",
  404: "Not Found",
  405: "Method Not Allowed",
  413: "Payload Too Large",
  431: "Request Header Fields Too Large",
};

/** An answer that is exactly `{code: status, msg, msg_detail: null}` for a transport-level status. */
export function assertPlain(res: RawResponse, status: 400 | 401 | 404 | 405 | 413 | 431, what = ""): void {
  assert.equal(res.status, status, `${what}: ${res.status} ${res.text.slice(0, 500)}`);
  assertJsonAnswer(res);
  assert.deepEqual(res.json, { code: status, msg: messages[status], msg_detail: null }, what);
}

/** An application error `{code, msg, msg_detail: null}` with its HTTP status. */
export function assertCode(res: RawResponse, http: number, code: number, msg: string, what = ""): void {
  assert.equal(res.status, http, `${what}: ${res.status} ${res.text.slice(0, 500)}`);
  assertJsonAnswer(res);
  assert.deepEqual(res.json, { code, msg, msg_detail: null }, what);
}

export interface FieldError {
  loc: (string | number)[];
  msg: string;
  type: string;
}

/** A 422 whose details are exactly these (loc, type) pairs, in any order; every msg a non-empty string of ours. */
export function assert422(
  res: RawResponse,
  expected: [loc: (string | number)[], type: string][],
  what = "",
): FieldError[] {
  assert.equal(res.status, 422, `${what}: ${res.status} ${res.text.slice(0, 800)}`);
  assertJsonAnswer(res);
  const body = res.json as { code: unknown; msg: unknown; msg_detail: FieldError[] };
  assert.deepEqual(Object.keys(body).sort(), ["code", "msg", "msg_detail"], what);
  assert.equal(body.code, 422, what);
  assert.equal(body.msg, "Validation Error", what);
  assert.ok(Array.isArray(body.msg_detail), what);
  for (const d of body.msg_detail) {
    assert.deepEqual(Object.keys(d).sort(), ["loc", "msg", "type"], `${what}: ${JSON.stringify(d)}`);
    assert.equal(typeof d.msg, "string");
    assert.ok(d.msg.length > 0);
  }
  const key = (e: unknown) => JSON.stringify(e);
  assert.deepEqual(
    body.msg_detail.map((d) => [d.loc, d.type]).sort((x, y) => key(x).localeCompare(key(y))),
    [...expected].sort((x, y) => key(x).localeCompare(key(y))),
    `${what}: ${JSON.stringify(body.msg_detail)}`,
  );
  return body.msg_detail;
}

/** Every stored file under a data folder, as "relative path:size" lines. */
function filesOnDisk(dataDir: string): string[] {
  const root = path.join(dataDir, "files");
  const out: string[] = [];
  const walk = (dir: string) => {
    if (!fs.existsSync(dir)) return;
    for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
      const full = path.join(dir, e.name);
      if (e.isDirectory()) walk(full);
      else out.push(`${path.relative(root, full)}:${fs.statSync(full).size}`);
    }
  };
  walk(root);
  return out.sort();
}

/** A document's download links carry a fresh expiry and signature on every read: keep the key. */
function stableDocument(d: Record<string, unknown>): Record<string, unknown> {
  const key = (u: unknown) => (typeof u === "string" ? new URL(u).pathname : u);
  return { ...d, front_file: key(d.front_file), back_file: key(d.back_file) };
}

export interface TargetOptions {
  /** Extra environment for every process (e.g. short time limits). */
  env?: Record<string, string>;
}

export async function startTarget(options: TargetOptions = {}): Promise<Target> {
  const processes: ServiceProcess[] = [];
  const dataDirs: string[] = [];
  let handle: DatabaseHandle | null = null;
  let dbName: string | null = null;

  async function close(): Promise<void> {
    const problems: unknown[] = [];
    await Promise.all(
      processes.map((s) =>
        s.child.exitCode === null && s.child.signalCode === null
          ? s.stop().catch((err: unknown) => void problems.push(err))
          : undefined,
      ),
    );
    if (handle !== null) await handle.close().catch((err: unknown) => void problems.push(err));
    if (dbName !== null && testDatabaseUrl !== null) {
      const c = new pg.Client({ connectionString: testDatabaseUrl });
      try {
        await c.connect();
        await c.query(`DROP DATABASE IF EXISTS ${dbName} WITH (FORCE)`);
      } catch (err) {
        problems.push(err);
      } finally {
        await c.end().catch(() => {});
      }
    }
    for (const dir of dataDirs) fs.rmSync(dir, { recursive: true, force: true });
    if (problems.length > 0) throw new AggregateError(problems, "cleanup of the attack target failed");
  }

  try {
    const common: Record<string, string> = {
      ADMIN_TOKEN: adminToken,
      FILE_URL_SECRET: fileUrlSecret,
      PRICE_FEED: "manual",
      LOG_LEVEL: "warn",
      ...options.env,
    };
    let databaseUrl: string | null = null;
    if (testDatabaseUrl !== null) {
      dbName = `cp_attack_${process.pid}_${Date.now()}`;
      const c = new pg.Client({ connectionString: testDatabaseUrl });
      await c.connect();
      try {
        await c.query(`CREATE DATABASE ${dbName}`);
      } finally {
        await c.end();
      }
      const u = new URL(testDatabaseUrl);
      u.pathname = `/${dbName}`;
      databaseUrl = u.toString();
      common.DATABASE_URL = databaseUrl;
    }
    // One after the other: the first migrates and seeds; a second finds that done.
    for (const adminPort of onPostgres ? ["0", "off"] : ["0"]) {
      const dataDir = tempDataDir();
      dataDirs.push(dataDir);
      processes.push(
        await startService({ ...common, ADMIN_PORT: adminPort, DATA_DIR: dataDir }, startTimeoutMs),
      );
    }
    const adminUrl = processes[0]!.adminUrl;
    if (adminUrl === null) throw new Error("the first process has no admin API");
    if (databaseUrl !== null) {
      handle = await openDatabase({ databaseUrl, pgliteDir: null, poolSize: 2 });
    }
    const addresses = processes.map((p) => {
      const u = new URL(p.partnerUrl);
      return { host: u.hostname.replace(/^\[|\]$/g, ""), port: Number(u.port) };
    });
    const adminAddress = (() => {
      const u = new URL(adminUrl);
      return { host: u.hostname.replace(/^\[|\]$/g, ""), port: Number(u.port) };
    })();
    const address = (via = 0) => addresses[via % addresses.length]!;
    const hostOf = (a: { host: string; port: number }) => `${a.host}:${a.port}`;

    const raw = (bytes: Buffer | string, via = 0, timeoutMs = requestTimeoutMs, halfClose = false) =>
      rawExchange(address(via), bytes, timeoutMs, halfClose);

    const admin = (method: string, url: string, body?: unknown) => {
      const payload = body === undefined ? undefined : JSON.stringify(body);
      const headers: [string, string][] = [["Authorization", `Bearer ${adminToken}`]];
      if (payload !== undefined) headers.push(["Content-Type", "application/json"]);
      return rawExchange(adminAddress, httpRequest(method, url, headers, payload, hostOf(adminAddress)));
    };

    async function newPartner(o: { allowedIps?: string[]; name?: string } = {}): Promise<Partner> {
      const keys = generateKeyPair();
      const res = await admin("POST", "/admin/partners", {
        name: o.name ?? "Attack Partner",
        public_key_pem: keys.publicKeyPem,
        allowed_ips: o.allowedIps ?? ["127.0.0.1/32", "::1/128"],
      });
      if (res.status !== 201) throw new Error(`partner create answered ${res.status}: ${res.text}`);
      return {
        id: (res.json as { result: { id: string } }).result.id,
        privateKey: crypto.createPrivateKey(keys.privateKeyPem),
        publicKeyPem: keys.publicKeyPem,
      };
    }

    const a = await newPartner({ name: "Partner A" });
    const b = await newPartner({ name: "Partner B" });

    let lastTimestamp = 0;
    const oneMillisecond = new Int32Array(new SharedArrayBuffer(4));
    function sign(o: SignOptions): SignedRequest {
      const partner = o.partner ?? a;
      // Ed25519 is deterministic: two identical requests signed in one millisecond would be one
      // signature, and the second a replay. Unless a time is given, each request gets its own
      // millisecond, waited for: a timestamp ahead of the service's clock is refused, and requests
      // can be sent faster than one per millisecond.
      let ts = o.timestampMs;
      if (ts === undefined) {
        while (Date.now() <= lastTimestamp) Atomics.wait(oneMillisecond, 0, 0, 1);
        ts = Date.now();
        lastTimestamp = ts;
      }
      const timestamp = String(ts);
      let body: Buffer | undefined;
      if (o.body === undefined) body = undefined;
      else if (typeof o.body === "string" || Buffer.isBuffer(o.body))
        body = Buffer.from(o.body as string | Buffer);
      else body = Buffer.from(JSON.stringify(o.body));
      const signedPath = o.signedPath ?? canonicalPath(o.target) ?? o.target;
      const canonical = canonicalString({
        timestamp,
        method: o.signedMethod ?? o.method,
        path: signedPath,
        body: o.signedBody ?? body ?? "",
      });
      const signature = crypto
        .sign(null, Buffer.from(canonical, "utf8"), partner.privateKey)
        .toString("base64");
      const given: Record<string, string | null> = {
        "X-Partner-ID": partner.id,
        "X-Timestamp": timestamp,
        "X-Signature": signature,
      };
      const contentType =
        o.contentType === undefined ? (body === undefined ? null : "application/json") : o.contentType;
      if (contentType !== null) given["Content-Type"] = contentType;
      for (const [k, v] of Object.entries(o.headers ?? {})) {
        const existing = Object.keys(given).find((g) => g.toLowerCase() === k.toLowerCase());
        if (existing !== undefined) delete given[existing];
        given[k] = v;
      }
      const headers = Object.entries(given).filter((e): e is [string, string] => e[1] !== null);
      headers.push(...(o.extraHeaders ?? []));
      const via = o.via ?? 0;
      return {
        bytes: httpRequest(o.method, o.target, headers, body, hostOf(address(via))),
        timestamp,
        signature,
        via,
      };
    }

    const call = (o: SignOptions) => {
      const s = sign(o);
      return raw(s.bytes, s.via);
    };

    async function createClient(partner: Partner, n: number) {
      const res = await call({
        partner,
        method: "POST",
        target: "/v1/partner/clients",
        body: clientPayload(n),
      });
      if (res.status !== 201) throw new Error(`client create answered ${res.status}: ${res.text}`);
      const r = (res.json as { result: { id: number; partner_client_id: string } }).result;
      return { id: r.id, partnerClientId: r.partner_client_id };
    }

    const deposit = (partner: Partner, partnerClientId: string, amount: string, ref: string) =>
      call({
        partner,
        method: "POST",
        target: "/v1/partner/deposits",
        body: { partner_client_id: partnerClientId, asset_id: "AED", amount, partner_order_ref: ref },
      });

    async function get(partner: Partner, target: string): Promise<unknown> {
      const res = await call({ partner, method: "GET", target });
      if (res.status !== 200) throw new Error(`snapshot read ${target} answered ${res.status}: ${res.text}`);
      return res.json;
    }

    async function partnerState(partner: Partner): Promise<unknown> {
      const clients = (await get(partner, "/v1/partner/clients?page_size=100")) as {
        items: { partner_client_id: string }[];
      };
      const perClient: unknown[] = [];
      for (const c of clients.items) {
        const id = encodeURIComponent(c.partner_client_id);
        const balances = await get(partner, `/v1/partner/balances?partner_client_id=${id}`);
        const docs = (await get(partner, `/v1/partner/clients/${id}/documents?page_size=100`)) as {
          items: Record<string, unknown>[];
          total: number;
        };
        perClient.push({ balances, documents: { ...docs, items: docs.items.map(stableDocument) } });
      }
      const orders = await get(partner, "/v1/partner/orders?page_size=100");
      return { clients, perClient, orders };
    }

    async function snapshot(): Promise<Snapshot> {
      const api = JSON.stringify([await partnerState(a), await partnerState(b)]);
      const files = dataDirs.map((d, i) => `process ${i}:\n${filesOnDisk(d).join("\n")}`).join("\n");
      let db = "";
      if (handle !== null) {
        const money = await moneyState(handle.db);
        const { rows } = await handle.db
          .selectFrom("clients")
          .select((eb) => eb.fn.countAll<string>().as("n"))
          .execute()
          .then(async (clients) => ({
            rows: [
              clients[0]?.n,
              (
                await handle!.db
                  .selectFrom("client_documents")
                  .select((eb) => eb.fn.countAll<string>().as("n"))
                  .executeTakeFirst()
              )?.n,
            ],
          }));
        db = JSON.stringify({ money, clients: rows[0], documents: rows[1] });
      }
      return { api, files, db };
    }

    return {
      description: onPostgres ? "two processes on PostgreSQL" : "one process on PGlite",
      processes,
      a,
      b,
      db: handle === null ? null : (handle as DatabaseHandle).db,
      address,
      adminUrl,
      admin,
      newPartner,
      sign,
      call,
      raw,
      createClient,
      deposit,
      snapshot,
      logs: () =>
        processes
          .map((p, i) => `--- process ${i}\n${p.output()}`)
          .join("\n")
          .slice(-6_000),
      close,
    };
  } catch (err) {
    await close().catch(() => {});
    throw err;
  }
}

/** Runs `f`, then checks that the state read back is the state before. */
export async function unchanged<T>(target: Target, f: () => Promise<T>): Promise<T> {
  const before = await target.snapshot();
  const result = await f();
  const after = await target.snapshot();
  assert.deepEqual(after, before, "the failed requests changed the state");
  return result;
}

/** Every process is still alive (nothing a request sends may stop one). */
export function assertAlive(target: Target): void {
  for (const [i, p] of target.processes.entries()) {
    assert.equal(p.child.exitCode, null, `process ${i} exited:\n${target.logs()}`);
    assert.equal(p.child.signalCode, null, `process ${i} was killed:\n${target.logs()}`);
  }
}

/** Whole files of each accepted format: small, but complete by their format's rules. */
export const wholeFiles = {
  /** A 1×1 greyscale baseline JPEG: SOI, JFIF, DQT, SOF, DHT, SOS, scan, EOI. */
  jpeg: Buffer.from(
    "ffd8ffe000104a46494600010100000100010000ffdb004300080606070605080707070909080a0c140d0c0b0b0c1912130f141d1a1f1e1d1a1c1c20242e2720222c231c1c2837292c30313434341f27393d38323c2e333432ffc0000b080001000101011100ffc4001f0000010501010101010100000000000000000102030405060708090a0bffc400b5100002010303020403050504040000017d01020300041105122131410613516107227114328191a1082342b1c11552d1f02433627282090a161718191a25262728292a3435363738393a434445464748494a535455565758595a636465666768696a737475767778797a838485868788898a92939495969798999aa2a3a4a5a6a7a8a9aab2b3b4b5b6b7b8b9bac2c3c4c5c6c7c8c9cad2d3d4d5d6d7d8d9dae1e2e3e4e5e6e7e8e9eaf1f2f3f4f5f6f7f8f9faffda0008010100003f00fbd3ffd9",
    "hex",
  ),
  png: pngFile(),
  pdf: pdfFile(),
};

function pngChunk(type: string, data: Buffer): Buffer {
  const length = Buffer.alloc(4);
  length.writeUInt32BE(data.length);
  const body = Buffer.concat([Buffer.from(type, "latin1"), data]);
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(zlib.crc32(body));
  return Buffer.concat([length, body, crc]);
}

/** A PDF of one empty page tree: header, two objects, the cross-reference table, trailer, %%EOF. */
function pdfFile(): Buffer {
  const objects = [
    "1 0 obj\n<< /Type /Catalog /Pages 2 0 R >>\nendobj\n",
    "2 0 obj\n<< /Type /Pages /Kids [] /Count 0 >>\nendobj\n",
  ];
  let text = "%PDF-1.4\n";
  const offsets: number[] = [];
  for (const o of objects) {
    offsets.push(text.length);
    text += o;
  }
  const xref = text.length;
  text += `xref\n0 ${objects.length + 1}\n0000000000 65535 f \n`;
  for (const at of offsets) text += `${String(at).padStart(10, "0")} 00000 n \n`;
  text += `trailer\n<< /Size ${objects.length + 1} /Root 1 0 R >>\nstartxref\n${xref}\n%%EOF\n`;
  return Buffer.from(text, "latin1");
}

/** A 1×1 greyscale PNG: signature, IHDR, IDAT, IEND. */
function pngFile(): Buffer {
  const ihdr = Buffer.from([0, 0, 0, 1, 0, 0, 0, 1, 8, 0, 0, 0, 0]);
  // One scanline: filter 0, one white byte.
  const idat = zlib.deflateSync(Buffer.from([0, 0xff]));
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    pngChunk("IHDR", ihdr),
    pngChunk("IDAT", idat),
    pngChunk("IEND", Buffer.alloc(0)),
  ]);
}

/**
 * Runs every check, then fails once with all the failures listed: a table of attacks reports
 * every case that is answered wrongly, not only the first.
 */
export async function everyCase<T>(cases: readonly T[], check: (c: T) => Promise<void>): Promise<void> {
  const failures: string[] = [];
  for (const c of cases) {
    try {
      await check(c);
    } catch (err) {
      const label = Array.isArray(c) && typeof c[0] === "string" ? c[0] : JSON.stringify(c).slice(0, 120);
      failures.push(`${label}: ${(err as Error).message.split("\n")[0]?.slice(0, 400)}`);
    }
  }
  assert.equal(
    failures.length,
    0,
    `${failures.length} of ${cases.length} cases failed:\n${failures.join("\n")}`,
  );
}
