// Whether a file is whole, once its first bytes have named its format (docs/decisions.md,
// "Documents"). A KYC file must be a complete file of that format, not its first bytes followed
// by anything: each function walks the format's own structure to its end marker and returns what
// is wrong in a few words of our own, or null. They only read the bytes; nothing here decodes an
// image or runs anything a file contains. Every loop advances by at least one byte and stops at
// the end of the buffer.

import zlib from "node:zlib";
import type { DocumentContentType } from "../../db/schema.ts";

/** Why `bytes` is not a whole file of `format`, or null when it is. */
export function wholeFileProblem(format: DocumentContentType, bytes: Uint8Array): string | null {
  switch (format) {
    case "image/jpeg":
      return jpegProblem(bytes);
    case "image/png":
      return pngProblem(bytes);
    case "application/pdf":
      return pdfProblem(bytes);
    case "image/heic":
    case "image/heif":
      return heifProblem(bytes);
  }
}

const u16 = (b: Uint8Array, at: number) => (b[at]! << 8) | b[at + 1]!;
const u32 = (b: Uint8Array, at: number) =>
  ((b[at]! << 24) >>> 0) + (b[at + 1]! << 16) + (b[at + 2]! << 8) + b[at + 3]!;
const latin1 = (b: Uint8Array, from: number, to: number) =>
  Buffer.from(b.buffer, b.byteOffset + from, to - from).toString("latin1");

/**
 * JPEG: the start-of-image marker, then marker segments whose lengths stay inside the file, a
 * frame header (SOFn) before the first scan, at least one scan, and the end-of-image marker as the
 * file's last two bytes. Fill bytes (0xFF) may precede a marker; inside a scan's entropy-coded
 * data, 0xFF is followed by 0x00 (a stuffed byte) or a restart marker.
 */
export function jpegProblem(b: Uint8Array): string | null {
  if (b.length < 4 || b[0] !== 0xff || b[1] !== 0xd8) return "no start-of-image marker";
  let at = 2;
  let frame = false;
  let scans = 0;
  while (at < b.length) {
    if (b[at] !== 0xff) return "a segment does not start with a marker";
    while (at < b.length && b[at] === 0xff) at++; // fill bytes, then the marker's code
    if (at >= b.length) return "cut short inside a marker";
    const marker = b[at]!;
    at++;
    if (marker === 0xd9) {
      if (!frame || scans === 0) return "no image data before the end-of-image marker";
      return at === b.length ? null : "data after the end-of-image marker";
    }
    if (marker === 0xd8) return "a second start-of-image marker";
    if (marker === 0x00) return "an invalid marker";
    if (marker === 0x01 || (marker >= 0xd0 && marker <= 0xd7)) continue; // no length
    if (at + 2 > b.length) return "cut short inside a segment";
    const length = u16(b, at);
    if (length < 2 || at + length > b.length) return "a segment runs past the end of the file";
    const isFrame = marker >= 0xc0 && marker <= 0xcf && marker !== 0xc4 && marker !== 0xc8 && marker !== 0xcc;
    if (isFrame) {
      if (length < 8) return "a frame header that is too short";
      frame = true;
    }
    at += length;
    if (marker !== 0xda) continue;
    if (!frame) return "a scan before the frame header";
    scans++;
    // Entropy-coded data runs to the next marker that is neither a stuffed byte nor a restart.
    // One pass over the bytes: data made of nothing but stuffed bytes stays linear and cheap.
    let next = -1;
    for (let i = at; i + 1 < b.length; i++) {
      if (b[i] !== 0xff) continue;
      const code = b[i + 1]!;
      if (code === 0x00 || (code >= 0xd0 && code <= 0xd7)) {
        i++;
        continue;
      }
      next = i;
      break;
    }
    if (next === -1) return "no end-of-image marker";
    at = next;
  }
  return "no end-of-image marker";
}

const pngSignature = [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a];

/**
 * PNG: the signature, then chunks (length, type, data, CRC) whose lengths fit and whose CRCs
 * match: IHDR first (13 bytes, non-zero width and height), at least one IDAT, IEND last and empty,
 * ending the file.
 */
export function pngProblem(b: Uint8Array): string | null {
  if (b.length < 8 || pngSignature.some((v, i) => b[i] !== v)) return "no PNG signature";
  let at = 8;
  let chunks = 0;
  let data = false;
  while (at < b.length) {
    if (chunks === pngChunksMax) return `more than ${pngChunksMax} chunks`;
    if (at + 12 > b.length) return "cut short inside a chunk";
    const length = u32(b, at);
    const type = u32(b, at + 4);
    if (!isLetters(b, at + 4)) return "a chunk with an invalid type";
    const name = () => latin1(b, at + 4, at + 8);
    if (length > 0x7fffffff || at + 12 + length > b.length)
      return `the ${name()} chunk runs past the end of the file`;
    const crc = u32(b, at + 8 + length);
    if (zlib.crc32(b.subarray(at + 4, at + 8 + length)) !== crc)
      return `the ${name()} chunk's CRC does not match`;
    if (chunks === 0) {
      if (type !== IHDR || length !== 13) return "the first chunk is not IHDR";
      if (u32(b, at + 8) === 0 || u32(b, at + 12) === 0) return "a zero width or height";
    } else if (type === IHDR) {
      return "a second IHDR chunk";
    }
    chunks++;
    at += 12 + length;
    if (type === IDAT) data = true;
    if (type === IEND) {
      if (length !== 0) return "an IEND chunk with data";
      if (!data) return "no IDAT chunk";
      return at === b.length ? null : "data after the IEND chunk";
    }
  }
  return "no IEND chunk";
}

/** A PNG of 5 MiB has a few hundred chunks at most (image data comes in chunks of 8 KiB or more). */
const pngChunksMax = 65_536;
const fourCC = (s: string) => u32(Buffer.from(s, "latin1"), 0);
const IHDR = fourCC("IHDR");
const IDAT = fourCC("IDAT");
const IEND = fourCC("IEND");

function isLetters(b: Uint8Array, at: number): boolean {
  for (let i = at; i < at + 4; i++) {
    const c = b[i]! | 0x20;
    if (c < 0x61 || c > 0x7a) return false;
  }
  return true;
}

/** Bytes PDF counts as white space (ISO 32000-1, 7.2.2). */
const pdfSpace = new Set([0x00, 0x09, 0x0a, 0x0c, 0x0d, 0x20]);

/**
 * PDF: `%PDF-x.y` as the first bytes, and a trailer as the last: `startxref`, the offset of the
 * cross-reference section (inside the file), and `%%EOF`, followed by nothing but white space.
 */
export function pdfProblem(b: Uint8Array): string | null {
  if (!/^%PDF-[0-9]\.[0-9]/.test(latin1(b, 0, Math.min(b.length, 8)))) return "no %PDF-x.y header";
  let end = b.length;
  while (end > 0 && pdfSpace.has(b[end - 1]!)) end--;
  const tail = latin1(b, Math.max(0, end - 1024), end);
  const m = /startxref[\0\t\n\f\r ]+([0-9]{1,10})[\0\t\n\f\r ]+%%EOF$/.exec(tail);
  if (m === null) return tail.endsWith("%%EOF") ? "no startxref before %%EOF" : "no %%EOF trailer at the end";
  if (Number(m[1]) >= b.length) return "startxref points past the end of the file";
  return null;
}

/** Brands of still HEIF/HEIC images and image sequences (ISO/IEC 23008-12). */
export const heifBrands: ReadonlySet<string> = new Set([
  "heic",
  "heix",
  "heim",
  "heis",
  "hevc",
  "hevx",
  "hevm",
  "hevs",
  "mif1",
  "mif2",
  "msf1",
]);

/**
 * HEIC/HEIF: an ISO base media file. The first box is `ftyp` naming a HEIF brand (as its major
 * brand or among the compatible ones); the boxes after it, a `meta` box among them, follow one
 * another to exactly the end of the file, each of a size that fits.
 */
export function heifProblem(b: Uint8Array): string | null {
  let at = 0;
  let boxes = 0;
  let meta = false;
  while (at < b.length) {
    if (boxes === heifBoxesMax) return `more than ${heifBoxesMax} boxes`;
    if (at + 8 > b.length) return "cut short inside a box header";
    let size = u32(b, at);
    for (let i = at + 4; i < at + 8; i++)
      if (b[i]! < 0x20 || b[i]! > 0x7e) return "a box with an invalid type";
    const type = latin1(b, at + 4, at + 8);
    let header = 8;
    if (size === 1) {
      if (at + 16 > b.length) return "cut short inside a box header";
      const large = (BigInt(u32(b, at + 8)) << 32n) | BigInt(u32(b, at + 12));
      if (large > BigInt(b.length - at)) return `the ${type} box runs past the end of the file`;
      size = Number(large);
      header = 16;
    } else if (size === 0) {
      size = b.length - at; // the last box runs to the end of the file
    }
    if (size < header) return `the ${type} box is shorter than its header`;
    if (at + size > b.length) return `the ${type} box runs past the end of the file`;
    if (boxes === 0) {
      if (type !== "ftyp") return "the first box is not ftyp";
      const body = size - header;
      if (body < 8 || body % 4 !== 0) return "a malformed ftyp box";
      const brands = [latin1(b, at + header, at + header + 4)];
      for (let i = at + header + 8; i < at + size; i += 4) brands.push(latin1(b, i, i + 4));
      if (!brands.some((brand) => heifBrands.has(brand))) return "the ftyp box names no HEIF brand";
    } else if (type === "ftyp") {
      return "a second ftyp box";
    }
    if (type === "meta") meta = true;
    boxes++;
    at += size;
  }
  if (boxes < 2) return "no box after ftyp";
  if (!meta) return "no meta box";
  return null;
}

/** A HEIF file has a handful of top-level boxes (ftyp, meta, mdat, perhaps free or idat). */
const heifBoxesMax = 1_024;
