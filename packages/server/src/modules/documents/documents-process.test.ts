// Malformed uploads against the real service process (docs/decisions.md, "Documents"): every body
// below is correctly signed, so it passes authentication and reaches the multipart parser. Each
// must get its answer in the contract's error shape, store nothing (no document, no file on disk),
// and leave the same process serving: a parser that throws where nobody listens ends the process,
// which an in-process test cannot see the way a partner would.

import assert from "node:assert/strict";
import fs from "node:fs";
import net from "node:net";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import util from "node:util";
import { generateKeyPair, signRequest } from "@counterpart/protocol";
import pg from "pg";
import { limits } from "../../config/limits.ts";
import { clientPayload, type MultipartPart, multipartBody, sampleFile } from "../../testing/fixtures.ts";
import { testDatabaseUrl } from "../../testing/harness.ts";
import { type ServiceProcess, startService, tempDataDir } from "../../testing/processes.ts";

const adminToken = "documents-process-admin-token-0123456789";
const boundary = "----counterpart-process-boundary-Zq81";
const formType = `multipart/form-data; boundary=${boundary}`;
const pcid = "process-client-1";
const docsPath = `/v1/partner/clients/${pcid}/documents`;
/** Longest a single exchange may take before the test calls it a hang. */
const exchangeMs = 20_000;

interface RawAnswer {
  /** null: the connection closed without an HTTP response. */
  status: number | null;
  body: string;
}

interface RawRequest {
  headers: Record<string, string>;
  body: Buffer;
  /** Content-Length to announce; the body's length by default. */
  contentLength?: number;
  /** Send the body as chunked transfer encoding instead (no Content-Length). */
  chunked?: boolean;
  /** Send only this many bytes of the body. */
  sendBytes?: number;
  /**
   * Half-close the connection once the body is written. Node's server then closes its side too,
   * so only requests that cannot complete do this.
   */
  halfClose?: boolean;
}

/**
 * One HTTP/1.1 exchange over a raw socket, so that lengths can lie and bodies can stop anywhere.
 * The answer is whatever came back before the server closed the connection (bounded in time).
 */
function exchange(port: number, target: string, r: RawRequest): Promise<RawAnswer> {
  return new Promise((resolve) => {
    const socket = net.connect({ host: "127.0.0.1", port });
    const received: Buffer[] = [];
    let done = false;
    const finish = () => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      socket.destroy();
      const text = Buffer.concat(received).toString("latin1");
      const m = /^HTTP\/1\.1 (\d{3})[^\r\n]*\r\n/.exec(text);
      const split = text.indexOf("\r\n\r\n");
      let body = split === -1 ? "" : text.slice(split + 4);
      if (/\r\ntransfer-encoding: chunked\r\n/i.test(text.slice(0, split))) body = unchunk(body);
      resolve({
        status: m === null ? null : Number(m[1]),
        body: Buffer.from(body, "latin1").toString("utf8"),
      });
    };
    const timer = setTimeout(finish, exchangeMs);
    socket.on("data", (c: Buffer) => received.push(c));
    socket.on("end", finish);
    socket.on("close", finish);
    // The server may answer (413) and close while the body is still being written.
    socket.on("error", () => {});
    socket.on("connect", () => {
      const lines = [`POST ${target} HTTP/1.1`, `Host: 127.0.0.1:${port}`, "Connection: close"];
      for (const [k, v] of Object.entries(r.headers)) lines.push(`${k}: ${v}`);
      if (r.chunked) lines.push("Transfer-Encoding: chunked");
      else lines.push(`Content-Length: ${r.contentLength ?? r.body.length}`);
      socket.write(`${lines.join("\r\n")}\r\n\r\n`);
      const body = r.body.subarray(0, r.sendBytes ?? r.body.length);
      if (!r.chunked) {
        socket.write(body);
        if (r.halfClose) socket.end();
        return;
      }
      const step = 256 * 1024;
      for (let at = 0; at < body.length; at += step) {
        const piece = body.subarray(at, at + step);
        socket.write(`${piece.length.toString(16)}\r\n`);
        socket.write(piece);
        socket.write("\r\n");
      }
      socket.write("0\r\n\r\n");
    });
  });
}

function unchunk(text: string): string {
  let out = "";
  let at = 0;
  for (let n = 0; n < 10_000; n++) {
    const eol = text.indexOf("\r\n", at);
    if (eol === -1) break;
    const size = Number.parseInt(text.slice(at, eol), 16);
    if (!Number.isFinite(size) || size === 0) break;
    out += text.slice(eol + 2, eol + 2 + size);
    at = eol + 2 + size + 2;
  }
  return out;
}

/** A multipart body written by hand: each line (text or bytes) followed by `eol`. */
function handBody(lines: (string | Buffer)[], eol = "\r\n"): Buffer {
  return Buffer.concat(
    lines.flatMap((l) => [typeof l === "string" ? Buffer.from(l, "latin1") : l, Buffer.from(eol)]),
  );
}

describe("malformed uploads against the service process", () => {
  const dataDir = tempDataDir();
  let svc: ServiceProcess;
  let port: number;
  let partnerId: string;
  let privateKey: string;
  let dropDatabase: (() => Promise<void>) | undefined;
  let countRows: (() => Promise<{ documents: number; files: number }>) | undefined;
  let lastSigned = 0;

  /** Signs `body` as sent, at a time later than any earlier request (no replay refusals). */
  function signed(
    method: "GET" | "POST",
    target: string,
    body: Buffer | string = "",
  ): Record<string, string> {
    lastSigned = Math.max(Date.now(), lastSigned + 1);
    return signRequest({ partnerId, privateKey, method, target, body, nowMs: lastSigned });
  }

  async function getJson(target: string): Promise<{ status: number; body: unknown }> {
    const res = await fetch(`${svc.partnerUrl}${target}`, {
      headers: signed("GET", target),
      signal: AbortSignal.timeout(exchangeMs),
    });
    return { status: res.status, body: await res.json() };
  }

  function storedFiles(): string[] {
    const root = path.join(dataDir, "files");
    if (!fs.existsSync(root)) return [];
    return fs
      .readdirSync(root, { recursive: true, withFileTypes: true })
      .filter((e) => e.isFile())
      .map((e) => e.name);
  }

  /** Documents of the client (through the API), files on disk, and rows when the database is reachable. */
  async function stored() {
    const list = await getJson(docsPath);
    assert.equal(list.status, 200, JSON.stringify(list.body));
    return {
      documents: (list.body as { total: number }).total,
      files: storedFiles().sort(),
      rows: countRows === undefined ? null : await countRows(),
    };
  }

  function assertAlive(why: string) {
    assert.equal(svc.child.exitCode, null, `${why}: the service exited:\n${svc.output().slice(-4000)}`);
    assert.equal(svc.child.signalCode, null, `${why}: the service died:\n${svc.output().slice(-4000)}`);
  }

  before(async () => {
    const env: Record<string, string> = { DATA_DIR: dataDir, ADMIN_TOKEN: adminToken, LOG_LEVEL: "warn" };
    if (testDatabaseUrl !== null) {
      const dbName = `cp_docs_${process.pid}_${Date.now()}`;
      const admin = new pg.Client({ connectionString: testDatabaseUrl });
      await admin.connect();
      await admin.query(`CREATE DATABASE ${dbName}`);
      const url = new URL(testDatabaseUrl);
      url.pathname = `/${dbName}`;
      env.DATABASE_URL = url.toString();
      const reader = new pg.Client({ connectionString: url.toString() });
      let readerOpen = false;
      countRows = async () => {
        if (!readerOpen) {
          await reader.connect();
          readerOpen = true;
        }
        const { rows } = await reader.query<{ documents: string; files: string }>(
          "SELECT (SELECT count(*) FROM client_documents) AS documents, (SELECT count(*) FROM document_files) AS files",
        );
        return { documents: Number(rows[0]!.documents), files: Number(rows[0]!.files) };
      };
      dropDatabase = async () => {
        if (readerOpen) await reader.end();
        await admin.query(`DROP DATABASE IF EXISTS ${dbName} WITH (FORCE)`);
        await admin.end();
      };
    }
    svc = await startService(env, 90_000);
    port = Number(new URL(svc.partnerUrl).port);
    const keys = generateKeyPair();
    privateKey = keys.privateKeyPem;
    const created = await fetch(`${svc.adminUrl}/admin/partners`, {
      method: "POST",
      headers: { authorization: `Bearer ${adminToken}`, "content-type": "application/json" },
      body: JSON.stringify({
        name: "Uploads Partner",
        public_key_pem: keys.publicKeyPem,
        allowed_ips: ["127.0.0.1/32", "::1/128"],
      }),
      signal: AbortSignal.timeout(exchangeMs),
    });
    assert.equal(created.status, 201, await created.clone().text());
    partnerId = ((await created.json()) as { result: { id: string } }).result.id;
    const payload = JSON.stringify(clientPayload(1, { partner_client_id: pcid }));
    const client = await fetch(`${svc.partnerUrl}/v1/partner/clients`, {
      method: "POST",
      headers: { ...signed("POST", "/v1/partner/clients", payload), "content-type": "application/json" },
      body: payload,
      signal: AbortSignal.timeout(exchangeMs),
    });
    assert.equal(client.status, 201, await client.text());
  });

  after(async () => {
    try {
      if (svc !== undefined && svc.child.exitCode === null && svc.child.signalCode === null) await svc.stop();
    } finally {
      await dropDatabase?.();
      fs.rmSync(dataDir, { recursive: true, force: true });
    }
  });

  const png = () => sampleFile("png", 4000);
  const typePart: MultipartPart = { name: "type", data: "government_id" };
  const frontPart = (data: Uint8Array = png()): MultipartPart => ({
    name: "front_file",
    filename: "id.png",
    contentType: "image/png",
    data,
  });
  const good = () => multipartBody([typePart, frontPart()], boundary).body;
  const closingAt = (body: Buffer) => body.lastIndexOf(Buffer.from(`\r\n--${boundary}--`));

  /**
   * An answer as the test compares it: the status and, for a 422, each error's [loc, type]; for
   * other errors the whole body; null when the connection closed without an answer.
   */
  type Seen =
    | { status: number; detail: [(string | number)[], string][] }
    | { status: number; body: unknown }
    | null;

  interface Case {
    why: string;
    request: () => RawRequest;
    /** The acceptable answers (more than one only where the HTTP exchange itself races). */
    accept: Seen[];
  }

  const invalid = (detail: [(string | number)[], string][]): Seen => ({ status: 422, detail });
  const badRequest: Seen = { status: 400, body: { code: 400, msg: "Bad Request", msg_detail: null } };
  const tooLarge: Seen = { status: 413, body: { code: 413, msg: "Payload Too Large", msg_detail: null } };

  /** Checks the error shape (and that no parser message leaks), then reduces the answer. */
  function seen(answer: RawAnswer, why: string): Seen {
    if (answer.status === null) return null;
    const body = JSON.parse(answer.body) as { code: number; msg: string; msg_detail: unknown };
    assert.deepEqual(Object.keys(body).sort(), ["code", "msg", "msg_detail"], why);
    assert.equal(body.code, answer.status, why);
    if (answer.status !== 422) return { status: answer.status, body };
    assert.equal(body.msg, "Validation Error", why);
    const detail = body.msg_detail as { loc: (string | number)[]; msg: string; type: string }[];
    for (const d of detail) {
      assert.equal(typeof d.msg, "string", why);
      assert.doesNotMatch(d.msg, /busboy|dicer|terminated early|unexpected end/i, why);
    }
    return { status: 422, detail: detail.map((d) => [d.loc, d.type]) };
  }

  /** A request whose body is signed exactly as sent. */
  const signedAs = (body: Buffer, contentType: string, extra: Partial<RawRequest> = {}): RawRequest => ({
    headers: { ...signed("POST", docsPath, body), "Content-Type": contentType },
    body,
    ...extra,
  });

  const bodyInvalid: [(string | number)[], string][] = [[["body"], "multipart_invalid"]];
  const cases: Case[] = [
    {
      why: "truncated before the closing boundary",
      request: () => {
        const b = good();
        return signedAs(b.subarray(0, closingAt(b)), formType);
      },
      accept: [invalid(bodyInvalid)],
    },
    {
      why: "the closing boundary cut in half",
      request: () => {
        const b = good();
        return signedAs(b.subarray(0, closingAt(b) + 12), formType);
      },
      accept: [invalid(bodyInvalid)],
    },
    {
      why: "cut in the middle of the file",
      request: () => {
        const b = good();
        return signedAs(b.subarray(0, closingAt(b) - 2000), formType);
      },
      accept: [invalid(bodyInvalid)],
    },
    {
      why: "cut in the middle of the file's part headers",
      request: () => {
        const b = good();
        const at = b.indexOf(Buffer.from('name="front_file"'));
        return signedAs(b.subarray(0, at + 8), formType);
      },
      accept: [invalid(bodyInvalid)],
    },
    {
      why: "no boundary in the Content-Type",
      request: () => signedAs(good(), "multipart/form-data"),
      accept: [invalid(bodyInvalid)],
    },
    {
      why: "the Content-Type names another boundary than the body uses",
      request: () => signedAs(good(), "multipart/form-data; boundary=some-other-boundary"),
      accept: [invalid(bodyInvalid)],
    },
    {
      why: "a boundary in the header that never occurs in the body",
      request: () => signedAs(Buffer.alloc(64 * 1024, "not a form at all. "), formType),
      accept: [invalid(bodyInvalid)],
    },
    {
      why: "a nested multipart/mixed part where the front file should be",
      request: () => {
        const inner = "inner-boundary-99";
        const nested = handBody([
          `--${inner}`,
          'Content-Disposition: file; filename="id.png"',
          "Content-Type: image/png",
          "",
          png(),
          `--${inner}--`,
        ]);
        return signedAs(
          multipartBody(
            [
              typePart,
              { name: "front_file", contentType: `multipart/mixed; boundary=${inner}`, data: nested },
            ],
            boundary,
          ).body,
          formType,
        );
      },
      accept: [invalid([[["body", "front_file"], "value_error"]])],
    },
    {
      why: "a nested multipart body sent as the front file",
      request: () => {
        const inner = multipartBody([frontPart()], "inner-boundary-42").body;
        return signedAs(multipartBody([typePart, frontPart(inner)], boundary).body, formType);
      },
      accept: [invalid([[["body", "front_file"], "file_type"]])],
    },
    {
      why: "huge part headers (200 KiB of header lines before the disposition)",
      request: () =>
        signedAs(
          handBody([
            `--${boundary}`,
            `X-Padding: ${"p".repeat(200 * 1024)}`,
            'Content-Disposition: form-data; name="front_file"; filename="id.png"',
            "",
            png(),
            `--${boundary}`,
            'Content-Disposition: form-data; name="type"',
            "",
            "government_id",
            `--${boundary}--`,
          ]),
          formType,
        ),
      accept: [invalid([[["body", "front_file"], "missing"]])],
    },
    {
      why: "thousands of tiny parts",
      request: () =>
        signedAs(
          multipartBody(
            [
              typePart,
              frontPart(),
              ...Array.from({ length: 5000 }, (_, i) => ({ name: `f${i}`, data: "x" })),
            ],
            boundary,
          ).body,
          formType,
        ),
      accept: [invalid([[["body"], "too_long"]])],
    },
    {
      why: "a file part without a name",
      request: () =>
        signedAs(
          handBody([
            `--${boundary}`,
            'Content-Disposition: form-data; name="type"',
            "",
            "government_id",
            `--${boundary}`,
            'Content-Disposition: form-data; filename="id.png"',
            "Content-Type: image/png",
            "",
            png(),
            `--${boundary}--`,
          ]),
          formType,
        ),
      accept: [invalid([[["body", "front_file"], "missing"]])],
    },
    {
      why: "a part without Content-Disposition",
      request: () =>
        signedAs(
          handBody([
            `--${boundary}`,
            'Content-Disposition: form-data; name="type"',
            "",
            "government_id",
            `--${boundary}`,
            "Content-Type: image/png",
            "",
            png(),
            `--${boundary}--`,
          ]),
          formType,
        ),
      accept: [invalid([[["body", "front_file"], "missing"]])],
    },
    {
      why: "two front_file parts",
      request: () => signedAs(multipartBody([typePart, frontPart(), frontPart()], boundary).body, formType),
      accept: [invalid([[["body", "front_file"], "value_error"]])],
    },
    {
      why: "a text field named like a file",
      request: () =>
        signedAs(multipartBody([typePart, { name: "front_file", data: "id.png" }], boundary).body, formType),
      accept: [invalid([[["body", "front_file"], "value_error"]])],
    },
    {
      why: "Content-Length shorter than the body (signed over what it announces)",
      request: () => {
        const b = good();
        const announced = closingAt(b) - 1000;
        return {
          headers: { ...signed("POST", docsPath, b.subarray(0, announced)), "Content-Type": formType },
          body: b,
          contentLength: announced,
        };
      },
      // Node reads the announced bytes as the request and the rest as another, broken one: which
      // answer comes first depends on when the rest is read.
      accept: [invalid(bodyInvalid), badRequest],
    },
    {
      why: "Content-Length longer than the body, the connection half-closed",
      request: () => {
        const b = good();
        return signedAs(b, formType, { contentLength: b.length + 5000, halfClose: true });
      },
      // The request never completes: the server may answer 400 or just close.
      accept: [badRequest, null],
    },
    {
      why: "bare LF line endings instead of CRLF",
      request: () =>
        signedAs(
          handBody(
            [
              `--${boundary}`,
              'Content-Disposition: form-data; name="type"',
              "",
              "government_id",
              `--${boundary}`,
              'Content-Disposition: form-data; name="front_file"; filename="id.png"',
              "",
              png(),
              `--${boundary}--`,
            ],
            "\n",
          ),
          formType,
        ),
      accept: [invalid(bodyInvalid)],
    },
    {
      why: "a 0-byte file",
      request: () => signedAs(multipartBody([typePart, frontPart(Buffer.alloc(0))], boundary).body, formType),
      accept: [invalid([[["body", "front_file"], "file_type"]])],
    },
    {
      why: "a file that is only the first bytes of a JPEG",
      request: () =>
        signedAs(
          multipartBody([typePart, frontPart(Buffer.from([0xff, 0xd8, 0xff]))], boundary).body,
          formType,
        ),
      accept: [invalid([[["body", "front_file"], "file_invalid"]])],
    },
    {
      why: "a file one byte over 5 MiB",
      request: () =>
        signedAs(
          multipartBody([typePart, frontPart(sampleFile("png", limits.documentFileBytesMax + 1))], boundary)
            .body,
          formType,
        ),
      accept: [invalid([[["body", "front_file"], "file_too_large"]])],
    },
    {
      why: "a body over 11 MiB, announced",
      request: () => {
        const b = Buffer.alloc(limits.multipartBodyBytesMax + 1, 0x61);
        return signedAs(b, formType, { sendBytes: 1024 });
      },
      accept: [tooLarge],
    },
    {
      why: "a body over 11 MiB, chunked",
      request: () =>
        signedAs(Buffer.alloc(limits.multipartBodyBytesMax + 1, 0x61), formType, { chunked: true }),
      accept: [tooLarge],
    },
    {
      why: "a correct form sent as application/json",
      request: () => signedAs(good(), "application/json"),
      // The JSON parser has the body first: a form whose file holds bytes that are not UTF-8 is
      // refused as such before it could be read as JSON at all.
      accept: [invalid([[["body"], "utf8_invalid"]])],
    },
    {
      why: "a correct form sent as text/plain",
      request: () => signedAs(good(), "text/plain"),
      accept: [invalid([[["body"], "multipart_expected"]])],
    },
    {
      why: "a correct form sent as multipart/mixed",
      request: () => signedAs(good(), `multipart/mixed; boundary=${boundary}`),
      accept: [invalid([[["body"], "multipart_expected"]])],
    },
  ];

  test("every malformed shape: its answer, in the error shape, nothing stored, and the process still serves", async () => {
    const before_ = await stored();
    assert.deepEqual(before_, {
      documents: 0,
      files: [],
      rows: countRows === undefined ? null : { documents: 0, files: 0 },
    });
    for (const c of cases) {
      const raw = await exchange(port, docsPath, c.request());
      if (raw.status === null) await new Promise((r) => setTimeout(r, 200)); // let an exit be seen
      assertAlive(c.why);
      const answer = seen(raw, c.why);
      assert.ok(
        c.accept.some((a) => util.isDeepStrictEqual(a, answer)),
        `${c.why}: ${JSON.stringify(answer)} is none of ${JSON.stringify(c.accept)}`,
      );
      assert.deepEqual(await stored(), before_, `${c.why}: something was stored`);
    }

    // The same process takes a whole upload after all of that.
    const body = good();
    const ok = await exchange(port, docsPath, signedAs(body, formType));
    assert.equal(ok.status, 201, ok.body);
    assertAlive("after the good upload");
    const after_ = await stored();
    assert.equal(after_.documents, 1);
    assert.equal(after_.files.length, 1);
    assert.doesNotMatch(svc.output(), /Unhandled 'error' event|uncaught/i);
  });
});
