// Multipart bodies (document uploads). The signature covers the exact bytes sent (docs/decisions.md,
// "Authentication" and "Documents"), so the body is read whole, under a hard limit, before
// authentication, exactly as JSON bodies are; it is parsed only afterwards, by the route that wants it, from that buffer.
//
// Why not @fastify/multipart's request.parts(): it parses from the socket while the handler runs,
// which is after authentication has already needed the whole body's hash. The buffer is therefore
// parsed with busboy, the parser @fastify/multipart is built on, under the same kind of limits.

import { Busboy, type BusboyInstance } from "@fastify/busboy";
import type { FastifyInstance, FastifyRequest } from "fastify";
import { limits } from "../config/limits.ts";
import { readBodyBytes } from "./body-parsing.ts";

declare module "fastify" {
  interface FastifyContextConfig {
    /** Set on routes that take multipart bodies: the whole body's hard limit (413 above it). */
    multipartBodyBytesMax?: number;
  }
}

/**
 * Keeps multipart bodies as bytes in `request.rawBody`. Routes that take multipart bodies carry
 * `config.multipartBodyBytesMax`; everywhere else the JSON limit applies, so an 11 MiB body is
 * never read for a route that has no use for it. The limit is checked against Content-Length
 * before anything is read, and again while reading.
 */
export function registerMultipartParser(app: FastifyInstance): void {
  app.addContentTypeParser(
    "multipart/form-data",
    async (request: FastifyRequest, payload: NodeJS.ReadableStream) => {
      const limit = request.routeOptions.config?.multipartBodyBytesMax ?? limits.jsonBodyBytesMax;
      request.rawBody = await readBodyBytes(request, payload, limit);
      return undefined;
    },
  );
}

export interface MultipartField {
  name: string;
  value: string;
  /** The value was longer than the field limit and was cut. */
  truncated: boolean;
}

export interface MultipartFile {
  name: string;
  bytes: Buffer;
  /** The file was longer than the file limit: `bytes` holds only its first part. */
  truncated: boolean;
}

export type MultipartFailure = "not_multipart" | "malformed" | "too_many_files" | "too_many_fields";

export type MultipartParse =
  | { ok: true; fields: MultipartField[]; files: MultipartFile[] }
  | { ok: false; failure: MultipartFailure };

export interface MultipartLimits {
  fileBytesMax: number;
  filesMax: number;
  fieldsMax: number;
  fieldBytesMax: number;
}

const multipartType = /^multipart\/form-data\s*(;|$)/i;
const boundaryParam = /;\s*boundary\s*=\s*(?:"([^"]*)"|([^\s;]*))/i;

/**
 * Whether the Content-Type names a boundary of 1 to 70 characters (RFC 2046). Busboy takes an
 * empty one and then finds no part at all, which would be reported as missing fields instead of
 * the malformed body it is.
 */
function hasUsableBoundary(contentType: string): boolean {
  const m = boundaryParam.exec(contentType);
  const boundary = m === null ? "" : (m[1] ?? m[2] ?? "");
  return boundary.length >= 1 && boundary.length <= 70;
}

/** Whether a Content-Type header announces multipart/form-data. */
export function isMultipart(contentType: string | undefined): boolean {
  return contentType !== undefined && multipartType.test(contentType);
}

/**
 * Parses a multipart/form-data body already in memory. A part is a file when it has a filename
 * (the name itself is dropped here and goes nowhere). Files longer than `fileBytesMax` are kept
 * cut, with `truncated` set, so the caller can name the field that is too large.
 */
export function parseMultipart(
  body: Buffer,
  contentType: string | undefined,
  bounds: MultipartLimits,
): Promise<MultipartParse> {
  if (!isMultipart(contentType)) return Promise.resolve({ ok: false, failure: "not_multipart" });
  if (!hasUsableBoundary(contentType ?? "")) return Promise.resolve({ ok: false, failure: "malformed" });
  let bb: BusboyInstance;
  try {
    bb = new Busboy({
      headers: { "content-type": contentType ?? "" },
      // Busboy's default also takes a part declared application/octet-stream for a file.
      isPartAFile: (_name, _type, filename) => filename !== undefined,
      limits: {
        fileSize: bounds.fileBytesMax,
        files: bounds.filesMax,
        fields: bounds.fieldsMax,
        parts: bounds.filesMax + bounds.fieldsMax,
        fieldSize: bounds.fieldBytesMax,
        headerPairs: limits.multipartPartHeadersMax,
      },
    });
  } catch {
    // No boundary, or a boundary busboy cannot use.
    return Promise.resolve({ ok: false, failure: "malformed" });
  }
  const parser = bb;
  return new Promise((resolve) => {
    const fields: MultipartField[] = [];
    const files: MultipartFile[] = [];
    let failure: MultipartFailure | null = null;
    let openFiles = 0;
    let finished = false;
    let settled = false;
    const settle = () => {
      if (settled || openFiles > 0 || (!finished && failure === null)) return;
      settled = true;
      clearTimeout(bound);
      resolve(failure === null ? { ok: true, fields, files } : { ok: false, failure });
    };
    // The body is in memory, so the parser is done within a few turns of the event loop; should
    // it ever stop short of both 'finish' and 'error', the request still gets its answer.
    const bound = setTimeout(() => {
      failure ??= "malformed";
      openFiles = 0;
      settle();
    }, limits.multipartParseMsMax);
    parser.on("field", (name: string, value: string, _nameTruncated: boolean, valueTruncated: boolean) => {
      fields.push({ name, value, truncated: valueTruncated });
    });
    parser.on("file", (name: string, stream: NodeJS.ReadableStream & { truncated?: boolean }) => {
      openFiles++;
      const chunks: Buffer[] = [];
      let closed = false;
      const close = () => {
        if (closed) return;
        closed = true;
        openFiles--;
        settle();
      };
      stream.on("data", (chunk: Buffer) => chunks.push(chunk));
      stream.on("end", () => {
        if (!closed) files.push({ name, bytes: Buffer.concat(chunks), truncated: stream.truncated === true });
        close();
      });
      // A body that ends inside this part (cut in the middle of the file, or no closing boundary)
      // fails the file's stream. An 'error' event nobody listens to would end the process.
      stream.on("error", () => {
        failure ??= "malformed";
        close();
      });
    });
    parser.on("filesLimit", () => {
      failure ??= "too_many_files";
    });
    parser.on("fieldsLimit", () => {
      failure ??= "too_many_fields";
    });
    parser.on("partsLimit", () => {
      failure ??= "too_many_fields";
    });
    parser.on("error", () => {
      failure ??= "malformed";
      // A broken body may leave a file stream that never ends; nothing more will arrive.
      openFiles = 0;
      settle();
    });
    parser.on("finish", () => {
      finished = true;
      settle();
    });
    try {
      parser.end(body);
    } catch {
      // The parser threw instead of emitting 'error': the body is as unreadable.
      failure ??= "malformed";
      openFiles = 0;
      settle();
    }
  });
}
