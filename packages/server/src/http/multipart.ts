// Multipart bodies (document uploads). The signature covers the exact bytes sent (DESIGN
// "Authentication"), so the body is read whole, under a hard limit, before authentication, exactly
// as JSON bodies are; it is parsed only afterwards, by the route that wants it, from that buffer.
//
// Why not @fastify/multipart's request.parts(): it parses from the socket while the handler runs,
// which is after authentication has already needed the whole body's hash. The buffer is therefore
// parsed with busboy, the parser @fastify/multipart is built on, under the same kind of limits.

import { Busboy, type BusboyInstance } from "@fastify/busboy";
import { errorCodes, type FastifyInstance, type FastifyRequest } from "fastify";
import { limits } from "../config/limits.ts";

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
      request.rawBody = await readBody(request, payload, limit);
      return undefined;
    },
  );
}

function readBody(request: FastifyRequest, payload: NodeJS.ReadableStream, limit: number): Promise<Buffer> {
  const declared = request.headers["content-length"];
  const declaredBytes = declared === undefined ? null : Number(declared);
  if (declaredBytes !== null && declaredBytes > limit) {
    return Promise.reject(new errorCodes.FST_ERR_CTP_BODY_TOO_LARGE());
  }
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let received = 0;
    const stop = () => {
      payload.removeListener("data", onData);
      payload.removeListener("end", onEnd);
      payload.removeListener("error", onError);
    };
    function onData(chunk: Buffer | string) {
      const bytes = typeof chunk === "string" ? Buffer.from(chunk) : chunk;
      received += bytes.length;
      if (received > limit) {
        stop();
        reject(new errorCodes.FST_ERR_CTP_BODY_TOO_LARGE());
        return;
      }
      chunks.push(bytes);
    }
    function onEnd() {
      stop();
      if (declaredBytes !== null && declaredBytes !== received) {
        reject(new errorCodes.FST_ERR_CTP_INVALID_CONTENT_LENGTH());
        return;
      }
      resolve(Buffer.concat(chunks, received));
    }
    function onError(err: Error) {
      stop();
      reject(err);
    }
    payload.on("data", onData);
    payload.on("end", onEnd);
    payload.on("error", onError);
    payload.resume();
  });
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
  let bb: BusboyInstance;
  try {
    bb = new Busboy({
      headers: { "content-type": contentType ?? "" },
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
      resolve(failure === null ? { ok: true, fields, files } : { ok: false, failure });
    };
    parser.on("field", (name: string, value: string, _nameTruncated: boolean, valueTruncated: boolean) => {
      fields.push({ name, value, truncated: valueTruncated });
    });
    parser.on("file", (name: string, stream: NodeJS.ReadableStream & { truncated?: boolean }) => {
      openFiles++;
      const chunks: Buffer[] = [];
      stream.on("data", (chunk: Buffer) => chunks.push(chunk));
      stream.on("end", () => {
        files.push({ name, bytes: Buffer.concat(chunks), truncated: stream.truncated === true });
        openFiles--;
        settle();
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
    parser.end(body);
  });
}
