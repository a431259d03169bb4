// Body parsers that keep the exact bytes for the signature (docs/reference.md §5.2: the raw body is hashed before
// anything parses it) and turn unreadable JSON into a 422 that is reported only after
// authentication has had its say.

import type { FieldError } from "@counterpart/protocol";
import { errorCodes, type FastifyInstance, type FastifyReply, type FastifyRequest } from "fastify";
import { limits } from "../config/limits.ts";
import { checkString } from "../platform/text.ts";

declare module "fastify" {
  interface FastifyInstance {
    /** The process's budget of request body bytes held at once (BODY_BYTES_IN_FLIGHT_MAX). */
    bodyBudget: BodyBudget | null;
  }
  interface FastifyRequest {
    /** The body bytes this request holds of the budget until its answer is done; null: none. */
    bodyHold: BodyHold | null;
  }
}

/**
 * The bytes of request bodies a process holds at once, being read or read and not yet answered
 * (docs/decisions.md, "Request bodies held at once"). A body is read whole before authentication
 * can hash it, so without a bound anyone could make a process hold 11 MiB per connection it
 * opens, for as long as its receive bound lets the body trickle in. Past the budget a body is
 * refused with a 503 (`BodyBudgetSpentError`), read and dropped like a body too large.
 */
export class BodyBudget {
  readonly max: number;
  #held = 0;
  #refused = 0;

  constructor(max: number) {
    this.max = max;
  }

  /** Takes `bytes` of the budget; false, taking nothing, when they do not fit (a refusal). */
  take(bytes: number): boolean {
    if (this.#held + bytes > this.max) {
      this.#refused++;
      return false;
    }
    this.#held += bytes;
    return true;
  }

  give(bytes: number): void {
    this.#held = Math.max(0, this.#held - bytes);
  }

  /** The bytes held now. */
  held(): number {
    return this.#held;
  }

  /** The takes refused since the budget was made: one per body refused. */
  refused(): number {
    return this.#refused;
  }
}

/** What a request holds of the budget, given back once when its answer is done or abandoned. */
export interface BodyHold {
  bytes: number;
  released: boolean;
}

/** A body refused because the process holds as many body bytes as its budget allows. */
export class BodyBudgetSpentError extends Error {
  constructor() {
    super("the process holds as many request body bytes as BODY_BYTES_IN_FLIGHT_MAX allows");
    this.name = "BodyBudgetSpentError";
  }
}

/**
 * For a request that announces a body: what it reads is held against the budget until its
 * response closes (sent, or the connection gone), whichever way the request ends. Called from an
 * onRequest hook; a body read where no hook ran (a target no route reads) is given back as soon as
 * it has been read.
 */
export function holdBodyUntilAnswered(request: FastifyRequest, reply: FastifyReply): void {
  const budget = request.server.bodyBudget;
  if (budget === null || budget === undefined) return;
  const hold: BodyHold = { bytes: 0, released: false };
  request.bodyHold = hold;
  reply.raw.once("close", () => {
    hold.released = true;
    budget.give(hold.bytes);
    hold.bytes = 0;
  });
}

/**
 * The 422 details of a body that cannot be read. Fixed texts of our own: a parser's message would
 * quote the request back and name the library (docs/decisions.md, "Hardening").
 */
export const unreadableBody = {
  json: { loc: ["body"], msg: "Request body is not a JSON document", type: "json_invalid" },
  utf8: { loc: ["body"], msg: "Request body is not valid UTF-8", type: "utf8_invalid" },
} as const satisfies Record<string, FieldError>;

// Fatal: a byte sequence that is not UTF-8 is refused, never replaced by U+FFFD. ignoreBOM keeps
// a byte order mark in the text, so JSON.parse refuses it as before.
const utf8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });

/** The body's text, or null when its bytes are not UTF-8. */
export function decodeUtf8(bytes: Uint8Array): string | null {
  try {
    return utf8.decode(bytes);
  } catch {
    return null;
  }
}

/**
 * Whether the request announces a body: a Transfer-Encoding, or a Content-Length above 0. Two
 * header lookups, so a request without a body pays nothing more.
 */
export function announcesBody(request: FastifyRequest): boolean {
  const headers = request.headers;
  if (headers["transfer-encoding"] !== undefined) return true;
  const length = headers["content-length"];
  return length !== undefined && length !== "0";
}

/**
 * Reads a body whole, under `limit` bytes: a Content-Length above it is a 413 without keeping any
 * of the body, and a body that grows past it while being read is a 413 too. Either way the rest of
 * the body is read and dropped first, within `limits.bodyLingerBytesMax` and `limits.bodyLingerMs`
 * (a lingering close: answering and closing while the client still writes would reset the
 * connection, and a reset can destroy the 413 before the client reads it). A stream error or a
 * client that goes away rejects (the error handler tells the two apart); every listener and timer
 * is removed once the read settles, so nothing can emit an unhandled 'error' through it. The wait
 * is bounded by the linger bounds and the server's receive bound (docs/decisions.md, "Hardening").
 * The bytes kept are taken from the process's body budget (BodyBudget): the Content-Length up
 * front, or each chunk of a chunked body as it comes. A body that does not fit is a
 * BodyBudgetSpentError (503), after the same lingering read.
 */
export function readBodyBytes(
  request: FastifyRequest,
  payload: NodeJS.ReadableStream,
  limit: number,
): Promise<Buffer> {
  const declared = request.headers["content-length"];
  const declaredBytes = declared === undefined ? null : Number(declared);
  const announcedTooLarge = declaredBytes !== null && declaredBytes > limit;
  // A length past what lingering would read: nothing is worth reading, the 413 goes at once.
  if (announcedTooLarge && declaredBytes > limit + limits.bodyLingerBytesMax) {
    return Promise.reject(new errorCodes.FST_ERR_CTP_BODY_TOO_LARGE());
  }
  const budget = request.server.bodyBudget ?? null;
  return new Promise((resolve, reject) => {
    let chunks: Buffer[] = [];
    let received = 0;
    /** Bytes dropped since the body was refused; null while it is still being kept. */
    let dropped: number | null = null;
    /** Why the body is being dropped, once it is. */
    let refusal: () => Error = tooLargeError;
    let lingerTimer: NodeJS.Timeout | undefined;
    /** Bytes of the budget this read has taken and not yet handed on or given back. */
    let taken = 0;
    const take = (bytes: number): boolean => {
      if (budget === null) return true;
      if (!budget.take(bytes)) return false;
      taken += bytes;
      return true;
    };
    const giveBack = () => {
      budget?.give(taken);
      taken = 0;
    };
    const stop = () => {
      clearTimeout(lingerTimer);
      payload.removeListener("data", onData);
      payload.removeListener("end", onEnd);
      payload.removeListener("close", onClose);
      // An error after the read settled (a client going away) is dropped, not left unhandled.
      payload.removeListener("error", onError);
      payload.on("error", ignore);
    };
    const fail = (err: Error) => {
      stop();
      giveBack();
      reject(err);
    };
    const refuse = () => fail(refusal());
    const startDropping = (why: () => Error) => {
      chunks = [];
      giveBack();
      dropped = 0;
      refusal = why;
      lingerTimer = setTimeout(refuse, limits.bodyLingerMs);
    };
    function onData(chunk: Buffer | string) {
      const length = typeof chunk === "string" ? Buffer.byteLength(chunk) : chunk.length;
      if (dropped !== null) {
        dropped += length;
        if (dropped > limits.bodyLingerBytesMax) refuse();
        return;
      }
      received += length;
      if (received > limit) {
        startDropping(tooLargeError);
        return;
      }
      // A declared length was taken whole before the first byte; a chunked body, as it comes.
      if (declaredBytes === null && !take(length)) {
        startDropping(budgetSpentError);
        return;
      }
      chunks.push(typeof chunk === "string" ? Buffer.from(chunk) : chunk);
    }
    function onEnd() {
      if (dropped !== null) {
        refuse();
        return;
      }
      if (declaredBytes !== null && declaredBytes !== received) {
        fail(new errorCodes.FST_ERR_CTP_INVALID_CONTENT_LENGTH());
        return;
      }
      stop();
      // Held until the answer is done, where a hook waits for it; else given back now.
      const hold = request.bodyHold;
      if (hold !== null && hold !== undefined && !hold.released) {
        hold.bytes += taken;
        taken = 0;
      } else {
        giveBack();
      }
      resolve(Buffer.concat(chunks, received));
    }
    function onClose() {
      fail(new BodyAbortedError());
    }
    function onError(err: Error) {
      fail(err);
    }
    payload.on("data", onData);
    payload.on("end", onEnd);
    payload.on("close", onClose);
    payload.on("error", onError);
    if (announcedTooLarge) startDropping(tooLargeError);
    else if (declaredBytes !== null && !take(declaredBytes)) startDropping(budgetSpentError);
    payload.resume();
  });
}

const tooLargeError = (): Error => new errorCodes.FST_ERR_CTP_BODY_TOO_LARGE();
const budgetSpentError = (): Error => new BodyBudgetSpentError();

/** The request stream closed before its body ended: the client went away. */
class BodyAbortedError extends Error {
  constructor() {
    super("the request closed before its body ended");
    this.name = "BodyAbortedError";
  }
}

const ignore = () => {};

/** The parsed JSON body, or undefined with `request.bodyError` set when it cannot be read. */
function parseJsonBody(request: FastifyRequest, body: Buffer): unknown {
  if (body.length === 0) return undefined;
  const text = decodeUtf8(body);
  if (text === null) {
    request.bodyError = [{ ...unreadableBody.utf8, loc: ["body"] }];
    return undefined;
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    request.bodyError = [{ ...unreadableBody.json, loc: ["body"] }];
    return undefined;
  }
  const problem = checkJsonValue(parsed);
  if (problem !== null) {
    request.bodyError = [problem];
    return undefined;
  }
  return parsed;
}

/**
 * Every body is read by readBodyBytes (not Fastify's own reader, which closes at once on a body
 * too large, so that the 413 can be lost to a reset) and its bytes kept for the signature.
 */
export function registerBodyParsers(app: FastifyInstance): void {
  app.removeAllContentTypeParsers();
  app.addContentTypeParser(
    "application/json",
    async (request: FastifyRequest, payload: NodeJS.ReadableStream) => {
      const body = await readBodyBytes(request, payload, limits.jsonBodyBytesMax);
      request.rawBody = body;
      return parseJsonBody(request, body);
    },
  );
  // Any other media type: the bytes are kept for the signature; the route's schema then finds no
  // usable body. Multipart routes register their own handling.
  app.addContentTypeParser("*", async (request: FastifyRequest, payload: NodeJS.ReadableStream) => {
    request.rawBody = await readBodyBytes(request, payload, limits.jsonBodyBytesMax);
    return undefined;
  });
}

/**
 * Bounds nesting depth, and refuses strings PostgreSQL cannot store (NUL) or that are not valid
 * Unicode (unpaired surrogates), naming where they are.
 */
export function checkJsonValue(value: unknown): FieldError | null {
  return walk(value, ["body"], 0);
}

function walk(value: unknown, loc: (string | number)[], depth: number): FieldError | null {
  if (typeof value === "string") return checkString(value, loc);
  if (value === null || typeof value !== "object") return null;
  if (depth >= limits.jsonDepthMax) {
    return {
      loc: ["body"],
      msg: `JSON nesting deeper than ${limits.jsonDepthMax} levels`,
      type: "json_invalid",
    };
  }
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const p = walk(value[i], [...loc, i], depth + 1);
      if (p !== null) return p;
    }
    return null;
  }
  for (const [k, v] of Object.entries(value)) {
    const keyProblem = checkString(k, [...loc, k]);
    if (keyProblem !== null) return keyProblem;
    const p = walk(v, [...loc, k], depth + 1);
    if (p !== null) return p;
  }
  return null;
}
