// A multipart/form-data body built as bytes (RFC 7578). The signature covers the body exactly as
// sent, so the SDK cannot hand a FormData to fetch (which picks its own boundary and writes the
// bytes later): it writes the bytes itself, hashes them, and sends the same buffer.

import { randomBytes } from "node:crypto";

export type MultipartPart =
  | { name: string; value: string }
  | { name: string; data: Uint8Array; filename: string; contentType: string };

export interface MultipartBody {
  body: Uint8Array;
  contentType: string;
}

/** Attempts at a boundary that occurs nowhere in the data; with 128 random bits one is enough. */
const BOUNDARY_ATTEMPTS_MAX = 4;

/**
 * Quoted-string escaping of names and filenames as browsers do it (the HTML form-data rules):
 * `"` becomes %22 and line breaks %0D/%0A, so a filename cannot end the header line or the quote.
 */
function quoted(value: string): string {
  return `"${value.replaceAll('"', "%22").replaceAll("\r", "%0D").replaceAll("\n", "%0A")}"`;
}

function encodeParts(parts: readonly MultipartPart[], boundary: string): Buffer {
  const chunks: Buffer[] = [];
  for (const part of parts) {
    let head = `--${boundary}\r\nContent-Disposition: form-data; name=${quoted(part.name)}`;
    if ("data" in part) {
      head += `; filename=${quoted(part.filename)}\r\nContent-Type: ${part.contentType.replace(/[\r\n]/g, "")}`;
    }
    chunks.push(Buffer.from(`${head}\r\n\r\n`, "utf8"));
    chunks.push("data" in part ? Buffer.from(part.data) : Buffer.from(part.value, "utf8"));
    chunks.push(Buffer.from("\r\n"));
  }
  chunks.push(Buffer.from(`--${boundary}--\r\n`));
  return Buffer.concat(chunks);
}

function occursIn(parts: readonly MultipartPart[], boundary: string): boolean {
  const needle = Buffer.from(boundary);
  return parts.some((p) => ("data" in p ? Buffer.from(p.data).includes(needle) : p.value.includes(boundary)));
}

/** The body and its Content-Type header; `boundary` is for tests, a random one is drawn otherwise. */
export function multipartBody(parts: readonly MultipartPart[], boundary?: string): MultipartBody {
  let chosen = boundary;
  for (let attempt = 0; chosen === undefined && attempt < BOUNDARY_ATTEMPTS_MAX; attempt++) {
    const candidate = `----CounterpartBoundary${randomBytes(16).toString("hex")}`;
    if (!occursIn(parts, candidate)) chosen = candidate;
  }
  if (chosen === undefined || occursIn(parts, chosen)) {
    throw new Error("multipartBody: no boundary could be found that does not occur in the data");
  }
  return { body: encodeParts(parts, chosen), contentType: `multipart/form-data; boundary=${chosen}` };
}
