// The structural checks of uploaded files (docs/decisions.md, "Documents"): whole files of each
// format pass at every size; each truncated or mangled variant is refused with its reason.

import assert from "node:assert/strict";
import { describe, test } from "node:test";
import zlib from "node:zlib";
import type { DocumentContentType } from "../../db/schema.ts";
import { type SampleFormat, sampleFile } from "../../testing/fixtures.ts";
import { heifProblem, jpegProblem, pdfProblem, pngProblem, wholeFileProblem } from "./file-formats.ts";

const mime: Record<SampleFormat, DocumentContentType> = {
  jpeg: "image/jpeg",
  png: "image/png",
  pdf: "application/pdf",
  heic: "image/heic",
  heif: "image/heif",
};

const bytes = (...parts: (string | number[] | Buffer)[]) =>
  Buffer.concat(parts.map((p) => (typeof p === "string" ? Buffer.from(p, "latin1") : Buffer.from(p))));

/** A copy of `b` with the byte at `at` (negative: from the end) replaced. */
function withByte(b: Buffer, at: number, value: number): Buffer {
  const out = Buffer.from(b);
  out[at < 0 ? out.length + at : at] = value;
  return out;
}

/** Runs one table: each row's bytes against the check, expecting null or a reason matching. */
function table(check: (b: Uint8Array) => string | null, rows: [string, Buffer, RegExp | null][]) {
  for (const [why, b, expected] of rows) {
    const got = check(b);
    if (expected === null) assert.equal(got, null, `${why}: ${got}`);
    else assert.match(got ?? "(accepted)", expected, why);
  }
}

describe("whole files", () => {
  test("generated files of every format are whole at every size, from the smallest to 5 MiB", () => {
    for (const format of Object.keys(mime) as SampleFormat[]) {
      const smallest = sampleFile(format).length;
      const sizes = [smallest, smallest + 1, smallest + 2, smallest + 3, smallest + 4, smallest + 13];
      sizes.push(1000, 4096, 65_541, 65_542, 65_543, 131_080, 5 * 1024 * 1024);
      for (const size of sizes) {
        const file = sampleFile(format, size);
        assert.equal(file.length, size, `${format} ${size}`);
        assert.equal(wholeFileProblem(mime[format], file), null, `${format} ${size}`);
      }
      assert.throws(() => sampleFile(format, smallest - 1), /no whole/);
    }
  });

  test("JPEG: start marker, sane segments, a frame and a scan, and the end marker last", () => {
    const good = sampleFile("jpeg", 600);
    const sof = good.indexOf(Buffer.from([0xff, 0xc0]));
    const sos = good.indexOf(Buffer.from([0xff, 0xda]));
    const noFrame = Buffer.concat([
      good.subarray(0, sof),
      good.subarray(sof + 2 + good.readUInt16BE(sof + 2)),
    ]);
    table(jpegProblem, [
      ["whole", good, null],
      ["restart markers and stuffed bytes inside the scan", restartScan(good, sos), null],
      ["FF D8 FF and nothing more", bytes([0xff, 0xd8, 0xff]), /start-of-image/],
      [
        "FF D8 FF E0 and a zero-length tail",
        bytes([0xff, 0xd8, 0xff, 0xe0], Buffer.alloc(16)),
        /segment|end/,
      ],
      ["the first 20 bytes", good.subarray(0, 20), /segment|cut short/],
      ["no end marker", good.subarray(0, -2), /end-of-image/],
      ["half the end marker", good.subarray(0, -1), /end-of-image/],
      ["a byte after the end marker", bytes(good, [0]), /after the end-of-image/],
      ["a second image after the first", bytes(good, good), /after the end-of-image/],
      ["start and end markers only", bytes([0xff, 0xd8, 0xff, 0xd9]), /no image data/],
      ["not a JPEG at all", bytes("GIF89a", Buffer.alloc(10)), /start-of-image/],
      ["a segment longer than the file", withByte(good, 4, 0xff), /past the end|cut short/],
      ["a segment length below 2", withByte(withByte(good, 4, 0), 5, 1), /past the end/],
      ["a scan without a frame header", noFrame, /scan before the frame/],
      ["a second start marker", bytes(good.subarray(0, 2), [0xff, 0xd8], good.subarray(2)), /second start/],
      ["a marker code of 0x00", bytes(good.subarray(0, 2), [0xff, 0x00], good.subarray(2)), /invalid marker/],
      ["cut inside the scan", good.subarray(0, sos + 12), /end-of-image/],
      ["a frame header too short", frameTooShort(good, sof), /frame header/],
      ["no segment after the start marker", bytes([0xff, 0xd8, 0x00, 0x00]), /marker/],
    ]);
  });

  test("PNG: signature, IHDR first, IDAT, IEND last; lengths and CRCs consistent", () => {
    const good = sampleFile("png", 300);
    const chunks = pngChunks(good);
    const at = (type: string) => chunks.find((c) => c.type === type)!;
    const ihdr = at("IHDR");
    const idat = at("IDAT");
    const iend = at("IEND");
    const signature = good.subarray(0, 8);
    table(pngProblem, [
      ["whole", good, null],
      ["signature only", signature, /no IEND/],
      ["signature and IHDR only", good.subarray(0, ihdr.end), /no IEND/],
      ["no IEND", good.subarray(0, iend.start), /no IEND/],
      ["cut inside IEND", good.subarray(0, -3), /cut short/],
      ["without IHDR", bytes(signature, good.subarray(ihdr.end)), /first chunk is not IHDR/],
      [
        "IDAT before IHDR",
        bytes(
          signature,
          good.subarray(idat.start, idat.end),
          good.subarray(ihdr.start, idat.start),
          good.subarray(idat.end),
        ),
        /first chunk is not IHDR/,
      ],
      ["no IDAT", bytes(good.subarray(0, idat.start), good.subarray(idat.end)), /no IDAT/],
      ["a byte after IEND", bytes(good, [0]), /after the IEND/],
      ["a chunk after IEND", bytes(good, good.subarray(idat.start, idat.end)), /after the IEND/],
      ["a CRC that does not match", withByte(good, idat.start + 9, good[idat.start + 9]! ^ 1), /CRC/],
      ["a length longer than the file", withByte(good, idat.start, 0x7f), /past the end/],
      ["a chunk type that is not letters", withByte(good, idat.start + 4, 0x31), /invalid type/],
      ["zero width", pngWith(good, ihdr, (data) => data.writeUInt32BE(0, 0)), /zero width/],
      [
        "an IHDR of the wrong length",
        bytes(signature, chunk("IHDR", Buffer.alloc(12, 1)), good.subarray(ihdr.end)),
        /not IHDR/,
      ],
      [
        "two IHDR chunks",
        bytes(good.subarray(0, ihdr.end), good.subarray(ihdr.start, ihdr.end), good.subarray(ihdr.end)),
        /second IHDR/,
      ],
      [
        "an IEND with data",
        bytes(good.subarray(0, iend.start), chunk("IEND", Buffer.from([0]))),
        /IEND chunk with data/,
      ],
      ["the signature cut", withByte(good, 1, 0x51), /signature/],
      [
        "65,533 empty chunks after IHDR (65,537 in all)",
        bytes(
          good.subarray(0, ihdr.end),
          Buffer.concat(Array(65_533).fill(chunk("tEXt", Buffer.alloc(0)))),
          good.subarray(ihdr.end),
        ),
        /more than 65536 chunks/,
      ],
      [
        "65,532 empty chunks (65,536 in all)",
        bytes(
          good.subarray(0, ihdr.end),
          Buffer.concat(Array(65_532).fill(chunk("tEXt", Buffer.alloc(0)))),
          good.subarray(ihdr.end),
        ),
        null,
      ],
    ]);
  });

  test("PDF: %PDF-x.y first, startxref and %%EOF last (white space after it allowed)", () => {
    const good = sampleFile("pdf", 700);
    const text = good.toString("latin1");
    table(pdfProblem, [
      ["whole", good, null],
      ["white space after %%EOF", bytes(good, "\r\n \t\n\0"), null],
      ["%%EOF without a final newline", bytes(text.trimEnd()), null],
      ["%PDF-1.4 alone", bytes("%PDF-1.4"), /%%EOF/],
      ["%PDF-1.4 and a newline", bytes("%PDF-1.4\n"), /%%EOF/],
      ["no version", bytes("%PDF-", text.slice(8)), /header/],
      ["something before the header", bytes(" ", good), /header/],
      ["no %%EOF", bytes(text.slice(0, text.lastIndexOf("%%EOF"))), /%%EOF/],
      ["cut in the middle", good.subarray(0, 300), /%%EOF/],
      ["text after %%EOF", bytes(good, "junk"), /%%EOF/],
      [
        "%%EOF without startxref",
        bytes(text.slice(0, text.lastIndexOf("startxref")), "%%EOF\n"),
        /startxref/,
      ],
      [
        "startxref past the end",
        bytes(text.replace(/startxref\n[0-9]+/, "startxref\n9999999")),
        /past the end/,
      ],
      [
        "the old stub: header, one object, spaces",
        bytes("%PDF-1.7\n%\xe2\xe3\xcf\xd3\n1 0 obj\n<<>>\nendobj\n", Buffer.alloc(200, 0x20)),
        /%%EOF/,
      ],
    ]);
  });

  test("HEIC/HEIF: ftyp first with a HEIF brand, a meta box, boxes that fit to the end", () => {
    const good = sampleFile("heic", 400);
    const ftyp = good.subarray(0, good.readUInt32BE(0));
    const meta = good.subarray(ftyp.length, ftyp.length + good.readUInt32BE(ftyp.length));
    const rest = good.subarray(ftyp.length + meta.length);
    const ftypOf = (major: string, ...compatible: string[]) =>
      box("ftyp", bytes(major, [0, 0, 0, 0], ...compatible));
    table(heifProblem, [
      ["whole heic", good, null],
      ["whole heif", sampleFile("heif", 400), null],
      ["the brand among the compatible ones only", bytes(ftypOf("isom", "mp41", "heix"), meta, rest), null],
      ["a last box of size 0 (to the end)", bytes(ftyp, meta, [0, 0, 0, 0], rest.subarray(4)), null],
      ["a box with a 64-bit size", bytes(ftyp, meta, largeBox("mdat", Buffer.alloc(40))), null],
      ["ftyp only", ftyp, /no box after ftyp/],
      ["no meta box", bytes(ftyp, rest), /no meta/],
      ["an unknown brand", bytes(ftypOf("isom", "mp41"), meta, rest), /no HEIF brand/],
      ["an ftyp without brands", bytes(box("ftyp", Buffer.alloc(4)), meta, rest), /malformed ftyp/],
      ["meta first", bytes(meta, ftyp, rest), /first box is not ftyp/],
      ["two ftyp boxes", bytes(ftyp, ftyp, meta, rest), /second ftyp/],
      ["cut inside the last box", good.subarray(0, -1), /past the end/],
      ["a partial box header at the end", bytes(good, [0, 0, 0]), /cut short/],
      ["a box shorter than its header", bytes(ftyp, meta, [0, 0, 0, 4], "mdat"), /shorter than its header/],
      [
        "a 64-bit size past the end",
        bytes(ftyp, meta, [0, 0, 0, 1], "mdat", [0, 0, 0, 1, 0, 0, 0, 0]),
        /past the end/,
      ],
      ["a box type that is not printable", bytes(ftyp, meta, [0, 0, 0, 8, 0, 1, 2, 3]), /invalid type/],
      ["the old stub: ftyp and spaces", bytes(ftyp, Buffer.alloc(200, 0x20)), /past the end/],
      [
        "1,024 boxes",
        bytes(ftyp, meta, Buffer.concat(Array(1_022).fill(box("free", Buffer.alloc(0))))),
        null,
      ],
      [
        "1,025 boxes",
        bytes(ftyp, meta, Buffer.concat(Array(1_023).fill(box("free", Buffer.alloc(0))))),
        /more than 1024 boxes/,
      ],
    ]);
  });

  test("wholeFileProblem checks the structure of the format the content was sniffed as", () => {
    const png = sampleFile("png");
    assert.equal(wholeFileProblem("image/png", png), null);
    assert.match(wholeFileProblem("image/jpeg", png) ?? "", /start-of-image/);
    assert.match(wholeFileProblem("application/pdf", png) ?? "", /header/);
    assert.match(wholeFileProblem("image/heif", png) ?? "", /./);
    assert.equal(wholeFileProblem("image/heif", sampleFile("heif")), null);
  });
});

function chunk(type: string, data: Buffer): Buffer {
  const length = Buffer.alloc(4);
  length.writeUInt32BE(data.length);
  const typed = Buffer.concat([Buffer.from(type, "latin1"), data]);
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(zlib.crc32(typed));
  return Buffer.concat([length, typed, crc]);
}

function pngChunks(png: Buffer): { type: string; start: number; end: number }[] {
  const out: { type: string; start: number; end: number }[] = [];
  for (let at = 8; at < png.length; ) {
    const end = at + 12 + png.readUInt32BE(at);
    out.push({ type: png.toString("latin1", at + 4, at + 8), start: at, end });
    at = end;
  }
  return out;
}

/** The PNG with one chunk's data changed and its CRC recomputed. */
function pngWith(
  png: Buffer,
  c: { type: string; start: number; end: number },
  change: (data: Buffer) => void,
) {
  const data = Buffer.from(png.subarray(c.start + 8, c.end - 4));
  change(data);
  return Buffer.concat([png.subarray(0, c.start), chunk(c.type, data), png.subarray(c.end)]);
}

function box(type: string, body: Buffer): Buffer {
  const head = Buffer.alloc(8);
  head.writeUInt32BE(body.length + 8, 0);
  head.write(type, 4, "latin1");
  return Buffer.concat([head, body]);
}

function largeBox(type: string, body: Buffer): Buffer {
  const head = Buffer.alloc(16);
  head.writeUInt32BE(1, 0);
  head.write(type, 4, "latin1");
  head.writeBigUInt64BE(BigInt(body.length + 16), 8);
  return Buffer.concat([head, body]);
}

/** The JPEG with its scan data replaced by data holding a stuffed 0xFF and two restart markers. */
function restartScan(jpeg: Buffer, sos: number): Buffer {
  const scanStart = sos + 2 + jpeg.readUInt16BE(sos + 2);
  return Buffer.concat([
    jpeg.subarray(0, scanStart),
    Buffer.from([0x12, 0xff, 0x00, 0x34, 0xff, 0xd0, 0x56, 0xff, 0xd1, 0x78]),
    jpeg.subarray(-2),
  ]);
}

/** The JPEG with its frame header's length set to 7. */
function frameTooShort(jpeg: Buffer, sof: number): Buffer {
  const out = Buffer.from(jpeg);
  out.writeUInt16BE(7, sof + 2);
  return out;
}
