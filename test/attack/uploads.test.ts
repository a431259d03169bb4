// Attack suite: document uploads (docs/decisions.md "Documents"). Truncated, unbounded, overfull
// or malformed multipart bodies, oversized files, and files that are not whole files of an
// accepted format are refused with the documented 422 or 413, store no file and no row, and never
// stop the process.

import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { type MultipartPart, multipartBody } from "../../packages/server/src/testing/fixtures.ts";
import {
  assert422,
  assertAlive,
  assertPlain,
  everyCase,
  startTarget,
  type Target,
  unchanged,
  wholeFiles,
} from "./target.ts";

const timeout = 240_000;
const boundary = "----attack-boundary-Zx81";

describe("attack: multipart uploads", { timeout }, () => {
  let t: Target;
  let client: string;
  let url: string;

  before(async () => {
    t = await startTarget();
    client = (await t.createClient(t.a, 1)).partnerClientId;
    url = `/v1/partner/clients/${client}/documents`;
  });
  after(async () => {
    if (t !== undefined) {
      assertAlive(t);
      await t.close();
    }
  });

  const form = (parts: MultipartPart[]) => multipartBody(parts, boundary);
  const upload = (body: Buffer, contentType = `multipart/form-data; boundary=${boundary}`) =>
    t.call({ method: "POST", target: url, body, contentType });
  const front = (data: Buffer): MultipartPart => ({
    name: "front_file",
    filename: "f.bin",
    contentType: "image/png",
    data,
  });
  const type: MultipartPart = { name: "type", data: "government_id" };

  test("whole files of each format are taken, and read back byte for byte", async () => {
    for (const [format, bytes] of Object.entries(wholeFiles)) {
      const res = await upload(form([type, front(bytes)]).body);
      assert.equal(res.status, 201, `${format}: ${res.text}`);
      const link = (res.json as { result: { front_file: string } }).result.front_file;
      const u = new URL(link);
      const got = await t.raw(
        `GET ${u.pathname}${u.search} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`,
      );
      assert.equal(got.status, 200, `${format} download`);
      assert.equal(Buffer.from(got.text, "utf8").length > 0, true);
      assert.equal(got.headers["x-content-type-options"], "nosniff");
      assert.match(got.headers["content-disposition"] ?? "", /^attachment/);
    }
  });

  test("files that start right but are not whole files: 422 file_invalid; other formats and polyglots: 422 file_type", async () => {
    const png = wholeFiles.png;
    const iend = png.length - 12;
    // Files that start like an accepted format but are not whole files of it: file_invalid.
    const notWhole: [string, Buffer][] = [
      ["JPEG head only", wholeFiles.jpeg.subarray(0, 20)],
      ["JPEG without its end marker", wholeFiles.jpeg.subarray(0, -2)],
      ["JPEG cut mid-table", wholeFiles.jpeg.subarray(0, 100)],
      [
        "JPEG with HTML after its end",
        Buffer.concat([wholeFiles.jpeg, Buffer.from("<html><script>alert(1)</script>")]),
      ],
      ["PNG signature and IHDR only", png.subarray(0, 33)],
      ["PNG without IEND", png.subarray(0, iend)],
      [
        "PNG with a ZIP after IEND",
        Buffer.concat([png, Buffer.from("PK\u0003\u0004 zip payload", "latin1")]),
      ],
      [
        "PNG with IDAT before IHDR",
        Buffer.concat([png.subarray(0, 8), png.subarray(33, iend), png.subarray(8, 33), png.subarray(iend)]),
      ],
      [
        "PNG with a bad CRC",
        Buffer.concat([png.subarray(0, 29), Buffer.from([png[29]! ^ 1]), png.subarray(30)]),
      ],
      ["PDF head only", Buffer.from("%PDF-1.7\n%\xe2\xe3\xcf\xd3\n1 0 obj\n<<>>\nendobj\n", "latin1")],
      ["PDF without %%EOF", wholeFiles.pdf.subarray(0, wholeFiles.pdf.lastIndexOf("%%EOF"))],
      [
        "PDF with a script after %%EOF",
        Buffer.concat([wholeFiles.pdf, Buffer.from("<script>alert(1)</script>")]),
      ],
      [
        "HEIC ftyp only",
        Buffer.concat([Buffer.from([0, 0, 0, 0x18]), Buffer.from("ftypheic\0\0\0\0mif1heic", "latin1")]),
      ],
    ];
    // Files that are not an accepted format at all: file_type.
    const otherFormats: [string, Buffer][] = [
      ["PDF header inside HTML", Buffer.from("<html>%PDF-1.4 <script>alert(1)</script></html>\n%%EOF\n")],
      [
        "HEIF sequence brand",
        Buffer.concat([Buffer.from([0, 0, 0, 0x18]), Buffer.from("ftypmsf1\0\0\0\0msf1hevc", "latin1")]),
      ],
      ["GIF", Buffer.from("GIF89a\u0001\u0000\u0001\u0000\u0000\u0000\u0000;", "latin1")],
      ["HTML named .png", Buffer.from("<!doctype html><script>alert(1)</script>")],
      ["SVG", Buffer.from('<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>')],
      ["ZIP", Buffer.from("PK\u0003\u0004\u0014\u0000\u0000\u0000", "latin1")],
      ["ELF", Buffer.from("\u007fELF\u0002\u0001\u0001", "latin1")],
      ["empty", Buffer.alloc(0)],
      ["one byte", Buffer.from([0xff])],
    ];
    await unchanged(t, async () => {
      await everyCase(notWhole, async ([what, bytes]) => {
        assert422(
          await upload(form([type, front(bytes)]).body),
          [[["body", "front_file"], "file_invalid"]],
          what,
        );
      });
      await everyCase(otherFormats, async ([what, bytes]) => {
        assert422(
          await upload(form([type, front(bytes)]).body),
          [[["body", "front_file"], "file_type"]],
          what,
        );
      });
      // A bad back file with a good front file: no document, no file kept.
      assert422(
        await upload(
          form([
            type,
            front(wholeFiles.png),
            { name: "back_file", filename: "b.jpg", data: wholeFiles.jpeg.subarray(0, 40) },
          ]).body,
        ),
        [[["body", "back_file"], "file_invalid"]],
        "bad back file",
      );
    });
  });

  test("truncated and malformed bodies: 422 multipart_invalid, or no answer to a client that went away", async () => {
    const whole = form([type, front(wholeFiles.png)]).body;
    const closing = Buffer.from(`--${boundary}--\r\n`);
    const withoutEnd = whole.subarray(0, whole.length - closing.length);
    const fileAt = whole.indexOf(wholeFiles.png);
    await unchanged(t, async () => {
      await everyCase(
        [
          ["no closing boundary", withoutEnd],
          ["cut mid-file", whole.subarray(0, fileAt + 20)],
          [
            "cut in a part header",
            whole.subarray(0, whole.indexOf("Content-Disposition", fileAt - 120) + 10),
          ],
          ["cut after the first boundary", whole.subarray(0, boundary.length + 4)],
          ["garbage", Buffer.from("this is not multipart at all")],
          [
            "wrong boundary",
            Buffer.from(whole.toString("latin1").replaceAll(boundary, "other-boundary"), "latin1"),
          ],
        ] as const,
        async ([what, body]) => {
          assert422(await upload(body), [[["body"], "multipart_invalid"]], what);
        },
      );
      // A well-formed body without parts: the form's fields are missing.
      assert422(
        await upload(closing),
        [
          [["body", "type"], "missing"],
          [["body", "front_file"], "missing"],
        ],
        "no parts at all",
      );
      // Fewer bytes than announced, then the client stops sending: nothing to answer, nothing kept.
      const s = t.sign({
        method: "POST",
        target: url,
        body: whole,
        contentType: `multipart/form-data; boundary=${boundary}`,
      });
      const text = s.bytes.toString("latin1");
      const cut = Buffer.from(text.slice(0, text.length - 100), "latin1");
      const gone = await t.raw(cut, 0, 10_000, true);
      assert.ok(gone.status === 0 || gone.status === 400, `${gone.status} ${gone.text}`);
      // Content types that announce no usable boundary, or no multipart body at all.
      await everyCase(
        [
          ["no boundary", "multipart/form-data", "multipart_invalid"],
          ["empty boundary", "multipart/form-data; boundary=", "multipart_invalid"],
          [
            "boundary over 70 characters",
            `multipart/form-data; boundary=${"b".repeat(200)}`,
            "multipart_invalid",
          ],
          ["not multipart", "application/octet-stream", "multipart_expected"],
          ["multipart bytes sent as JSON", "application/json", "utf8_invalid"],
        ] as const,
        async ([what, contentType, type]) => {
          assert422(await upload(whole, contentType), [[["body"], type]], what);
        },
      );
    });
    assertAlive(t);
    const after = await t.call({ method: "GET", target: "/v1/partner/asset-pairs" });
    assert.equal(after.status, 200, after.text);
  });

  test("too many parts, files or fields, long fields and oversized files are refused", async () => {
    await unchanged(t, async () => {
      const threeFiles = form([
        type,
        front(wholeFiles.png),
        { name: "back_file", filename: "b.png", data: wholeFiles.png },
        { name: "extra_file", filename: "c.png", data: wholeFiles.png },
      ]);
      assert422(await upload(threeFiles.body), [[["body"], "too_long"]], "three files");
      const manyFields = form([
        type,
        front(wholeFiles.png),
        ...Array.from({ length: 11 }, (_, i) => ({ name: `f${i}`, data: "x" })),
      ]);
      assert422(await upload(manyFields.body), [[["body"], "too_long"]], "eleven more fields");
      const manyParts = form(Array.from({ length: 500 }, (_, i) => ({ name: `p${i}`, data: "" })));
      assert422(await upload(manyParts.body), [[["body"], "too_long"]], "500 parts");
      assert422(
        await upload(form([{ name: "type", data: "g".repeat(2_000) }, front(wholeFiles.png)]).body),
        [[["body", "type"], "enum"]],
        "2 000-byte type",
      );
      assert422(
        await upload(form([type, type, front(wholeFiles.png)]).body),
        [[["body", "type"], "value_error"]],
        "type twice",
      );
      assert422(
        await upload(form([type, front(wholeFiles.png), front(wholeFiles.png)]).body),
        [[["body", "front_file"], "value_error"]],
        "front file twice",
      );
      // One part with more header lines than allowed.
      const headers = Array.from({ length: 40 }, (_, i) => `X-Part-${i}: y`).join("\r\n");
      const crowded = Buffer.from(
        `--${boundary}\r\nContent-Disposition: form-data; name="type"\r\n${headers}\r\n\r\ngovernment_id\r\n--${boundary}--\r\n`,
      );
      const crowdedRes = await upload(crowded);
      assert.equal(crowdedRes.status, 422, crowdedRes.text);

      // A file of 5 MiB + 1 byte: a PNG that is otherwise whole.
      const png = wholeFiles.png;
      const pad = Buffer.alloc(5 * 1024 * 1024 + 1 - png.length, 0);
      const large = Buffer.concat([png.subarray(0, png.length - 12), pad, png.subarray(png.length - 12)]);
      assert422(
        await upload(form([type, front(large)]).body),
        [[["body", "front_file"], "file_too_large"]],
        "5 MiB + 1",
      );
      // Over 11 MiB announced: a 413 before the body is read.
      const s = t.sign({
        method: "POST",
        target: url,
        body: "x",
        contentType: `multipart/form-data; boundary=${boundary}`,
      });
      const head = s.bytes
        .toString("latin1")
        .split("\r\n\r\n")[0]!
        .replace("Content-Length: 1", `Content-Length: ${12 * 1024 * 1024}`);
      assertPlain(await t.raw(`${head}\r\n\r\n--${boundary}\r\n`, 0, 5_000), 413, "12 MiB announced");
      // Over 1 MiB of multipart to a route that takes none: a 413.
      const elsewhere = t.sign({
        method: "POST",
        target: "/v1/partner/deposits",
        body: form([type, front(Buffer.alloc(1_100_000, 1))]).body,
        contentType: `multipart/form-data; boundary=${boundary}`,
      });
      assertPlain(await t.raw(elsewhere.bytes), 413, "1.1 MiB multipart to deposits");
    });
  });
});
