// Uploading documents (docs/decisions.md, "Authentication" and "Documents"): the signature covers
// the exact multipart bytes, multipart limits and the 413 before the body is read, 5 MiB files,
// formats by content and whole files only, malformed bodies, signed links served without partner
// headers. Every failure is checked to have changed nothing: no
// document row and no stored file.

import assert from "node:assert/strict";
import fs from "node:fs";
import http from "node:http";
import type { AddressInfo } from "node:net";
import os from "node:os";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { signRequest } from "@counterpart/protocol";
import type { LightMyRequestResponse } from "fastify";
import { limits } from "../../config/limits.ts";
import {
  clientPayload,
  clientsState,
  insertClient,
  type MultipartPart,
  multipartBody,
  sampleFile,
} from "../../testing/fixtures.ts";
import { startTestContext, type TestContext, type TestPartner } from "../../testing/harness.ts";

const MiB = 1024 * 1024;

describe("client documents", () => {
  let ctx: TestContext;
  let dataDir: string;
  let stranger: TestPartner;

  before(async () => {
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "cp-documents-"));
    ctx = await startTestContext({ env: { DATA_DIR: dataDir } });
    stranger = await ctx.addPartner();
    for (const k of [1, 2]) {
      const res = await ctx.signed({ method: "POST", url: "/v1/partner/clients", body: clientPayload(k) });
      assert.equal(res.statusCode, 201, res.body);
    }
  });
  after(async () => {
    await ctx.close();
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  const docsUrl = (pcid: string) => `/v1/partner/clients/${encodeURIComponent(pcid)}/documents`;

  function upload(
    pcid: string,
    parts: readonly MultipartPart[],
    options: { partner?: TestPartner; headers?: Record<string, string> } = {},
  ): Promise<LightMyRequestResponse> {
    const { body, contentType } = multipartBody(parts);
    return ctx.signed({
      method: "POST",
      url: docsUrl(pcid),
      body,
      headers: { "content-type": contentType, ...options.headers },
      ...(options.partner ? { partner: options.partner } : {}),
    });
  }

  const typePart = (type = "government_id"): MultipartPart => ({ name: "type", data: type });
  const filePart = (
    name: string,
    data: Uint8Array,
    filename = "scan.bin",
    contentType = "application/octet-stream",
  ) => ({
    name,
    filename,
    contentType,
    data,
  });

  /** Every file under the store's folder. */
  function storedFiles(): string[] {
    const root = path.join(dataDir, "files");
    if (!fs.existsSync(root)) return [];
    return fs
      .readdirSync(root, { recursive: true, withFileTypes: true })
      .filter((e) => e.isFile())
      .map((e) => e.name);
  }

  /** What a failure must leave as it was: clients, documents, and the stored files. */
  async function state() {
    return { db: await clientsState(ctx.services.database.db), files: storedFiles().sort() };
  }

  async function expect422(
    res: Promise<LightMyRequestResponse>,
    expected: [(string | number)[], string][],
    why = "",
  ) {
    const before_ = await state();
    const r = await res;
    assert.equal(r.statusCode, 422, `${why}: ${r.body}`);
    assert.deepEqual(
      r.json().msg_detail.map((d: { loc: unknown; type: string }) => [d.loc, d.type]),
      expected,
      why,
    );
    for (const d of r.json().msg_detail) assert.equal(typeof d.msg, "string");
    assert.deepEqual(await state(), before_, `${why}: state changed`);
  }

  /** GET a signed link the way a browser would: no partner headers. */
  function download(link: string, headers: Record<string, string> = {}) {
    const u = new URL(link);
    return ctx.app.inject({ method: "GET", url: `${u.pathname}${u.search}`, headers });
  }

  test("201 {result}: id, type, a signed front_file link, back_file null, created_at; the link serves the exact bytes", async () => {
    const bytes = sampleFile("pdf", 4096);
    const res = await upload("client-1", [
      typePart("proof_of_address"),
      filePart("front_file", bytes, "bill.pdf"),
    ]);
    assert.equal(res.statusCode, 201, res.body);
    const doc = res.json().result;
    assert.deepEqual(Object.keys(doc).sort(), ["back_file", "created_at", "front_file", "id", "type"]);
    assert.ok(Number.isInteger(doc.id));
    assert.equal(doc.type, "proof_of_address");
    assert.equal(doc.back_file, null);
    assert.match(doc.created_at, /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/);
    assert.match(
      doc.front_file,
      /^http:\/\/localhost:80\/v1\/files\/[A-Za-z0-9_-]{43}\?expires=\d+&signature=[A-Za-z0-9_-]{43}$/,
    );
    const file = await download(doc.front_file);
    assert.equal(file.statusCode, 200);
    assert.ok(file.rawPayload.equals(bytes));
    assert.equal(file.headers["content-type"], "application/pdf");
    assert.equal(file.headers["content-disposition"], "attachment");
    assert.equal(file.headers["x-content-type-options"], "nosniff");
    assert.equal(file.headers["cache-control"], "private, no-store");
  });

  test("front and back files; every accepted format is recognised by its content, whatever its name or declared type", async () => {
    const formats = [
      ["jpeg", "image/jpeg"],
      ["png", "image/png"],
      ["heic", "image/heic"],
      ["heif", "image/heif"],
      ["pdf", "application/pdf"],
    ] as const;
    for (const [format, mime] of formats) {
      const front = sampleFile(format, 1000);
      const back = sampleFile(format, 2000);
      const res = await upload("client-1", [
        typePart(),
        filePart("front_file", front, "front.txt", "text/plain"),
        filePart("back_file", back, "back"),
      ]);
      assert.equal(res.statusCode, 201, `${format}: ${res.body}`);
      const doc = res.json().result;
      const f = await download(doc.front_file);
      const b = await download(doc.back_file);
      assert.equal(f.headers["content-type"], mime);
      assert.equal(b.headers["content-type"], mime);
      assert.ok(f.rawPayload.equals(front));
      assert.ok(b.rawPayload.equals(back));
      assert.notEqual(new URL(doc.front_file).pathname, new URL(doc.back_file).pathname);
    }
  });

  test("a text file named .pdf is a 422 on that field; so are other formats and empty files", async () => {
    const text = Buffer.from("This is not a PDF, whatever its name says.\n");
    await expect422(
      upload("client-1", [typePart(), filePart("front_file", text, "passport.pdf", "application/pdf")]),
      [[["body", "front_file"], "file_type"]],
    );
    await expect422(
      upload("client-1", [
        typePart(),
        filePart("front_file", sampleFile("png")),
        filePart("back_file", text, "back.pdf", "application/pdf"),
      ]),
      [[["body", "back_file"], "file_type"]],
    );
    const gif = Buffer.from("GIF89a\x01\x00\x01\x00\x00\x00\x00", "latin1");
    const zip = Buffer.from([0x50, 0x4b, 0x03, 0x04, 0x14, 0, 0, 0, 8, 0]);
    for (const [bytes, why] of [
      [gif, "gif"],
      [zip, "zip"],
      [Buffer.alloc(0), "empty"],
    ] as const) {
      await expect422(
        upload("client-1", [typePart(), filePart("front_file", bytes, "x.jpg", "image/jpeg")]),
        [[["body", "front_file"], "file_type"]],
        why,
      );
    }
  });

  test("a file whose first bytes name a format but which is not a whole file of it is a 422 file_invalid on that field", async () => {
    const jpeg = sampleFile("jpeg", 2000);
    const png = sampleFile("png", 2000);
    const iend = png.length - 12;
    const pngNoEnd = png.subarray(0, iend);
    const pngNoHeader = Buffer.concat([png.subarray(0, 8), png.subarray(8 + 25)]);
    const pdf = sampleFile("pdf", 2000);
    const heic = sampleFile("heic", 2000);
    const stubs: [string, Buffer][] = [
      ["FF D8 FF and a zero-length tail", Buffer.from([0xff, 0xd8, 0xff])],
      ["FF D8 FF and zeros", Buffer.concat([Buffer.from([0xff, 0xd8, 0xff, 0xe0]), Buffer.alloc(1000)])],
      ["the first 20 bytes of a JPEG", jpeg.subarray(0, 20)],
      ["a JPEG without its end marker", jpeg.subarray(0, -2)],
      ["a JPEG with bytes after its end marker", Buffer.concat([jpeg, Buffer.from("<script>")])],
      ["a PNG without IEND", pngNoEnd],
      ["a PNG without IHDR", pngNoHeader],
      ["a PNG signature and IHDR only", png.subarray(0, 33)],
      ["%PDF-1.4 alone", Buffer.from("%PDF-1.4")],
      ["a PDF cut in half", pdf.subarray(0, 1000)],
      ["a HEIC of an ftyp box only", heic.subarray(0, heic.readUInt32BE(0))],
      ["a HEIC cut short", heic.subarray(0, -1)],
    ];
    for (const [why, bytes] of stubs) {
      await expect422(
        upload("client-1", [typePart(), filePart("front_file", bytes, "scan.png", "image/png")]),
        [[["body", "front_file"], "file_invalid"]],
        why,
      );
      await expect422(
        upload("client-1", [typePart(), filePart("front_file", png), filePart("back_file", bytes)]),
        [[["body", "back_file"], "file_invalid"]],
        `${why} (back)`,
      );
    }
    const res = await upload("client-1", [typePart(), filePart("front_file", pngNoEnd)]);
    assert.match(res.json().msg_detail[0].msg, /^File should be a whole PNG file: no IEND chunk$/);
  });

  test("5 MiB per file: 5,242,880 bytes pass, one byte more is a 422 on that field", async () => {
    assert.equal(limits.documentFileBytesMax, 5_242_880);
    const exact = sampleFile("png", limits.documentFileBytesMax);
    const over = sampleFile("png", limits.documentFileBytesMax + 1);
    const ok = await upload("client-1", [
      typePart(),
      filePart("front_file", exact),
      filePart("back_file", exact),
    ]);
    assert.equal(ok.statusCode, 201, ok.body);
    const served = await download(ok.json().result.back_file);
    assert.equal(served.rawPayload.length, limits.documentFileBytesMax);
    await expect422(upload("client-1", [typePart(), filePart("front_file", over)]), [
      [["body", "front_file"], "file_too_large"],
    ]);
    await expect422(
      upload("client-1", [typePart(), filePart("front_file", exact), filePart("back_file", over)]),
      [[["body", "back_file"], "file_too_large"]],
    );
  });

  test("413 for a body over 11 MiB, answered before authentication and before the body is read", async () => {
    assert.equal(limits.multipartBodyBytesMax, 11 * MiB);
    const { contentType } = multipartBody([]);
    const before_ = await state();
    const tooBig = await ctx.app.inject({
      method: "POST",
      url: docsUrl("client-1"),
      headers: { "content-type": contentType },
      payload: Buffer.alloc(limits.multipartBodyBytesMax + 1, 0x61),
    });
    assert.equal(tooBig.statusCode, 413);
    assert.deepEqual(tooBig.json(), { code: 413, msg: "Payload Too Large", msg_detail: null });
    // At the limit the body is read (and found not to be a form): a 422 after authentication.
    const atLimit = await ctx.signed({
      method: "POST",
      url: docsUrl("client-1"),
      body: Buffer.alloc(limits.multipartBodyBytesMax, 0x61),
      headers: { "content-type": contentType },
    });
    assert.equal(atLimit.statusCode, 422);
    // Other routes keep the JSON limit for multipart bodies.
    const elsewhere = await ctx.app.inject({
      method: "POST",
      url: "/v1/partner/clients",
      headers: { "content-type": contentType },
      payload: Buffer.alloc(limits.jsonBodyBytesMax + 1, 0x61),
    });
    assert.equal(elsewhere.statusCode, 413);
    assert.deepEqual(await state(), before_);

    await ctx.app.listen({ port: 0, host: "127.0.0.1" });
    {
      const { port } = ctx.app.server.address() as AddressInfo;
      const announced = await new Promise<{ status: number; body: string }>((resolve, reject) => {
        const req = http.request(
          {
            host: "127.0.0.1",
            port,
            method: "POST",
            path: docsUrl("client-1"),
            headers: {
              "content-type": contentType,
              "content-length": String(limits.multipartBodyBytesMax + 1),
            },
          },
          (res) => {
            let body = "";
            res.on("data", (c) => (body += c));
            res.on("end", () => resolve({ status: res.statusCode ?? 0, body }));
          },
        );
        req.on("error", reject);
        // A few bytes only: the answer comes from the announced length.
        req.write("--x");
      });
      assert.equal(announced.status, 413);
      assert.deepEqual(JSON.parse(announced.body), { code: 413, msg: "Payload Too Large", msg_detail: null });
    }
    assert.deepEqual(await state(), before_);
  });

  test("the form: type from the enum, front_file required, one of each; every problem a 422 at its field", async () => {
    const png = sampleFile("png");
    const front = filePart("front_file", png);
    await expect422(upload("client-1", [front]), [[["body", "type"], "missing"]], "no type");
    await expect422(upload("client-1", [typePart()]), [[["body", "front_file"], "missing"]], "no front");
    await expect422(upload("client-1", []), [
      [["body", "type"], "missing"],
      [["body", "front_file"], "missing"],
    ]);
    await expect422(
      upload("client-1", [typePart("passport"), front]),
      [[["body", "type"], "enum"]],
      "bad type",
    );
    await expect422(
      upload("client-1", [typePart("GOVERNMENT_ID"), front]),
      [[["body", "type"], "enum"]],
      "case",
    );
    await expect422(
      upload("client-1", [typePart("x".repeat(5000)), front]),
      [[["body", "type"], "enum"]],
      "long",
    );
    await expect422(upload("client-1", [typePart("government_id\u0000"), front]), [
      [["body", "type"], "string_nul"],
    ]);
    await expect422(
      upload("client-1", [filePart("type", Buffer.from("government_id"), "t.txt"), front]),
      [[["body", "type"], "string_type"]],
      "type as a file",
    );
    await expect422(
      upload("client-1", [typePart(), { name: "front_file", data: "just text" }]),
      [[["body", "front_file"], "value_error"]],
      "front as a text field",
    );
    await expect422(
      upload("client-1", [typePart(), front, { name: "back_file", data: "text" }]),
      [[["body", "back_file"], "value_error"]],
      "back as a text field",
    );
    await expect422(upload("client-1", [typePart(), typePart("bank_statement"), front]), [
      [["body", "type"], "value_error"],
    ]);
    await expect422(upload("client-1", [typePart(), front, front]), [
      [["body", "front_file"], "value_error"],
    ]);
    // A part is a file when it has a filename, whatever its declared type.
    await expect422(
      upload("client-1", [
        typePart(),
        { name: "front_file", contentType: "application/octet-stream", data: png },
      ]),
      [[["body", "front_file"], "value_error"]],
      "front as an octet-stream part without a filename",
    );
    const octetType = await upload("client-1", [
      { name: "type", contentType: "application/octet-stream", data: "bank_statement" },
      front,
    ]);
    assert.equal(octetType.statusCode, 201, octetType.body);
    // Unknown fields are ignored.
    const ok = await upload("client-1", [typePart("bank_statement"), { name: "note", data: "hello" }, front]);
    assert.equal(ok.statusCode, 201, ok.body);
  });

  test("multipart limits: at most 2 files and 10 fields; a body that is not a form is a 422", async () => {
    const png = sampleFile("png");
    assert.equal(limits.multipartFilesMax, 2);
    assert.equal(limits.multipartFieldsMax, 10);
    await expect422(
      upload("client-1", [
        typePart(),
        filePart("front_file", png),
        filePart("back_file", png),
        filePart("extra", png),
      ]),
      [[["body"], "too_long"]],
      "three files",
    );
    const fields = (count: number) => Array.from({ length: count }, (_, i) => ({ name: `f${i}`, data: "x" }));
    const nine = await upload("client-1", [typePart(), ...fields(9), filePart("front_file", png)]);
    assert.equal(nine.statusCode, 201, nine.body);
    await expect422(upload("client-1", [typePart(), ...fields(10), filePart("front_file", png)]), [
      [["body"], "too_long"],
    ]);

    const before_ = await state();
    const bodies: [string, string | Buffer, Record<string, string>][] = [
      ["json", JSON.stringify({ type: "government_id" }), { "content-type": "application/json" }],
      ["no boundary", "--x\r\n", { "content-type": "multipart/form-data" }],
      [
        "truncated",
        multipartBody([typePart(), filePart("front_file", png)]).body.subarray(0, 200),
        {
          "content-type": multipartBody([]).contentType,
        },
      ],
      ["urlencoded", "type=government_id", { "content-type": "application/x-www-form-urlencoded" }],
      ["empty", Buffer.alloc(0), { "content-type": multipartBody([]).contentType }],
    ];
    for (const [why, body, headers] of bodies) {
      const res = await ctx.signed({ method: "POST", url: docsUrl("client-1"), body, headers });
      assert.equal(res.statusCode, 422, `${why}: ${res.body}`);
      assert.deepEqual(res.json().msg_detail[0].loc, ["body"], why);
    }
    const none = await ctx.signed({ method: "POST", url: docsUrl("client-1") });
    assert.equal(none.statusCode, 422);
    assert.deepEqual(await state(), before_);
  });

  test("a signed body cut inside a file, or without its closing boundary, is a 422 at [body]; the service goes on", async () => {
    const png = sampleFile("png", 5000);
    const { body, contentType } = multipartBody([typePart(), filePart("front_file", png)]);
    const closing = body.lastIndexOf(Buffer.from("\r\n--"));
    const cuts: [string, Buffer][] = [
      ["inside the file", body.subarray(0, closing - 2500)],
      ["right after the file's bytes", body.subarray(0, closing)],
      ["no closing boundary", body.subarray(0, closing + 2)],
      ["half the closing boundary", body.subarray(0, closing + 20)],
      [
        "a back file cut short",
        multipartBody([typePart(), filePart("front_file", png), filePart("back_file", png)]).body.subarray(
          0,
          9000,
        ),
      ],
    ];
    for (const [why, cut] of cuts) {
      const before_ = await state();
      const res = await ctx.signed({
        method: "POST",
        url: docsUrl("client-1"),
        body: cut,
        headers: { "content-type": contentType },
      });
      assert.equal(res.statusCode, 422, `${why}: ${res.body}`);
      assert.deepEqual(
        res.json(),
        {
          code: 422,
          msg: "Validation Error",
          msg_detail: [
            { loc: ["body"], msg: "The multipart body could not be parsed", type: "multipart_invalid" },
          ],
        },
        why,
      );
      assert.deepEqual(await state(), before_, `${why}: state changed`);
    }
    const whole = await upload("client-1", [typePart(), filePart("front_file", png)]);
    assert.equal(whole.statusCode, 201, whole.body);
  });

  test("the signature covers the exact multipart bytes sent", async () => {
    const { body, contentType } = multipartBody([
      typePart(),
      filePart("front_file", sampleFile("jpeg", 3000)),
    ]);
    const sign = (bytes: Buffer) =>
      signRequest({
        partnerId: ctx.partner.id,
        privateKey: ctx.partner.privateKeyPem,
        method: "POST",
        target: docsUrl("client-1"),
        body: bytes,
        nowMs: ctx.clock.nowMs(),
      });
    const before_ = await state();
    const altered = Buffer.from(body);
    altered[altered.length - 100] = (altered[altered.length - 100]! + 1) % 256;
    const tampered = await ctx.app.inject({
      method: "POST",
      url: docsUrl("client-1"),
      headers: { ...sign(body), "content-type": contentType },
      payload: altered,
    });
    assert.equal(tampered.statusCode, 401);
    assert.deepEqual(await state(), before_);
    // Unsigned: refused before anything is parsed or stored.
    const unsigned = await ctx.app.inject({
      method: "POST",
      url: docsUrl("client-1"),
      headers: { "content-type": contentType },
      payload: body,
    });
    assert.equal(unsigned.statusCode, 401);
    ctx.clock.advance(1);
    const good = await ctx.app.inject({
      method: "POST",
      url: docsUrl("client-1"),
      headers: { ...sign(body), "content-type": contentType },
      payload: body,
    });
    assert.equal(good.statusCode, 201, good.body);
  });

  test("file names never reach the file system: files are stored under random keys only", async () => {
    const names = [
      "../../../../etc/passwd",
      "..\\..\\boot.ini",
      "/tmp/evil.pdf",
      'a"b.pdf',
      "ü n i c o d e.pdf",
    ];
    for (const filename of names) {
      const res = await upload("client-1", [typePart(), filePart("front_file", sampleFile("pdf"), filename)]);
      assert.equal(res.statusCode, 201, `${filename}: ${res.body}`);
    }
    for (const name of storedFiles()) assert.match(name, /^[A-Za-z0-9_-]{43}$/);
    const everything = fs.readdirSync(dataDir, { recursive: true }).map(String);
    for (const entry of everything) assert.doesNotMatch(entry, /passwd|boot\.ini|evil|unicode|ü/);
  });

  test("422 comes before 2008; unknown and other partners' clients are 2008", async () => {
    const png = sampleFile("png");
    const before_ = await state();
    const unknown = await upload("nobody", [typePart(), filePart("front_file", png)]);
    assert.equal(unknown.statusCode, 400);
    assert.deepEqual(unknown.json(), { code: 2008, msg: "Invalid client ID", msg_detail: null });
    const invalidAndUnknown = await upload("nobody", [typePart("nope"), filePart("front_file", png)]);
    assert.equal(invalidAndUnknown.statusCode, 422);
    const foreign = await upload("client-1", [typePart(), filePart("front_file", png)], {
      partner: stranger,
    });
    assert.equal(foreign.json().code, 2008);
    assert.deepEqual(await state(), before_);
  });

  test("documents can be uploaded for unverified and deactivated clients", async () => {
    const db = ctx.services.database.db;
    const row = await insertClient(db, ctx.partner.id, 30, { status: "docs_under_review", active: false });
    const res = await upload(row.partnerClientId, [
      typePart("residency_visa"),
      filePart("front_file", sampleFile("heic")),
    ]);
    assert.equal(res.statusCode, 201, res.body);
  });
});
