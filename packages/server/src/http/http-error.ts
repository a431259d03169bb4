// The only place that turns failures into HTTP. Services return expected failures as values with
// a catalog name; routes raise them as HttpError; anything else is a 500 whose details stay in the
// log.

import type { Socket } from "node:net";
import { type ErrorName, errorBody, errorCatalog, type FieldError } from "@counterpart/protocol";
import type { FastifyError, FastifyReply, FastifyRequest } from "fastify";
import { isUnavailable } from "../db/errors.ts";
import { ServiceUnavailableError } from "../db/transaction.ts";
import { FileStoreUnavailableError } from "../platform/file-store.ts";
import { BodyBudgetSpentError } from "./body-parsing.ts";
import { toFieldErrors } from "./validation.ts";

export class HttpError extends Error {
  readonly errorName: ErrorName;
  readonly detail: unknown;
  constructor(name: ErrorName, detail: unknown = null) {
    super(name);
    this.name = "HttpError";
    this.errorName = name;
    this.detail = detail;
  }
}

export function validationError(errors: FieldError[]): HttpError {
  return new HttpError("validation_error", errors);
}

export function sendError(reply: FastifyReply, name: ErrorName, detail: unknown = null): FastifyReply {
  return reply
    .code(errorCatalog[name].status)
    .type("application/json; charset=utf-8")
    .send(errorBody(name, detail));
}

interface ValidationCarrier {
  validation?: unknown[];
  validationContext?: string;
}

export function errorHandler(
  error: FastifyError,
  request: FastifyRequest,
  reply: FastifyReply,
): FastifyReply {
  if (error instanceof HttpError) return sendError(reply, error.errorName, error.detail);
  if (!request.raw.complete && request.raw.socket?.destroyed === true) {
    // The client went away before its request was read in full, or was cut off by a receive
    // bound (clientErrorHandler has answered it): the body reader reports the aborted stream.
    // Nothing can be sent and nothing failed here.
    request.log.info({ errorCode: error.code }, "connection closed before the request was read");
    return sendError(reply, "request_timeout");
  }
  const v = error as FastifyError & ValidationCarrier;
  if (Array.isArray(v.validation)) {
    return sendError(
      reply,
      "validation_error",
      toFieldErrors(v.validation as Parameters<typeof toFieldErrors>[0], v.validationContext ?? "body"),
    );
  }
  if (error instanceof ServiceUnavailableError) {
    request.log.warn({ err: error.cause }, "transaction retries exhausted");
    return sendError(reply, "service_unavailable");
  }
  if (isUnavailable(error)) {
    // The database refused, lost or did not answer: a retry with backoff can succeed
    // (docs/errors.md). Not a 500, which would suggest a bug.
    request.log.warn({ err: error }, "database unavailable");
    return sendError(reply, "service_unavailable");
  }
  if (error instanceof BodyBudgetSpentError) {
    // The process holds as many request bodies as it may: retryable, nothing of this one kept.
    request.log.warn({ held: request.server.bodyBudget?.held() }, "request body refused: body budget spent");
    reply.header("Retry-After", "1");
    return sendError(reply, "service_unavailable");
  }
  if (error instanceof FileStoreUnavailableError) {
    // The disk or the bucket failed or did not answer in time: retryable, like a database outage.
    request.log.warn({ err: error }, "file store unavailable");
    return sendError(reply, "service_unavailable");
  }
  switch (error.code) {
    case "FST_ERR_CTP_BODY_TOO_LARGE":
      return sendError(reply, "payload_too_large");
    case "FST_ERR_ROUTE_MISSING_CONTENT_TYPE":
      // A QUERY without Content-Type, which RFC 10008 §2 says a server must fail, on any path
      // (Fastify refuses it before routing's handler, and before authentication): the request
      // cannot be read, as any other such one. It was a 500.
      reply.header("Connection", "close");
      return sendError(reply, "bad_request");
    case "FST_ERR_CTP_INVALID_MEDIA_TYPE":
    case "FST_ERR_CTP_INVALID_CONTENT_LENGTH":
    case "FST_ERR_CTP_EMPTY_JSON_BODY":
      return sendError(reply, "validation_error", [
        { loc: ["body"], msg: "Request body could not be read", type: "json_invalid" },
      ]);
  }
  request.log.error({ err: error }, "unexpected failure");
  return sendError(reply, "internal_error");
}

/** The raw bytes of an error response written straight to a socket, in the contract's shape. */
function rawErrorResponse(name: ErrorName): string {
  const body = JSON.stringify(errorBody(name));
  const { status, msg } = errorCatalog[name];
  return (
    `HTTP/1.1 ${status} ${msg}\r\nConnection: close\r\n` +
    `Content-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`
  );
}

/** Sockets whose malformed bytes are answered once the responses before them are sent. */
const answering = new WeakSet<Socket>();

/** The longest a malformed request's answer waits for the responses ahead of it. */
const answerAfterInFlightMaxMs = 60_000;

type InFlight = { headersSent?: boolean; req?: { complete?: boolean }; once(e: string, f: () => void): void };

function inFlightOf(socket: Socket): InFlight | null {
  return (socket as Socket & { _httpMessage?: InFlight | null })._httpMessage ?? null;
}

/**
 * Node's `clientError`: requests that never reach routing (malformed HTTP: 400; headers over the
 * limit: 431) and requests not received in full in time (408: the headers or the whole request
 * past limits.requestHeadersTimeoutMs / requestReceiveTimeoutMs). Each is answered in the
 * contract's shape and the socket is closed.
 *
 * Bytes that cannot be parsed after a request received in full (a client pipelining, or sending
 * garbage behind its request in one write) are answered only once the responses of the requests
 * before them are sent: that request is being served, and a deposit it makes must not reach its
 * client as a 400 (found by a black-box probe, 7 December; Node's own answer would close the
 * socket under the response). A response already begun, or the request it answers, cut short by
 * the malformed bytes, is not waited for: the socket is closed (after the answer, when nothing of
 * the response was written yet).
 */
export function clientErrorHandler(err: Error, socket: Socket): void {
  const code = (err as NodeJS.ErrnoException).code;
  if (code === "ECONNRESET" || socket.destroyed || answering.has(socket)) return;
  const inFlight = inFlightOf(socket);
  if (code !== "ERR_HTTP_REQUEST_TIMEOUT" && inFlight !== null && inFlight.req?.complete === true) {
    answering.add(socket);
    const cap = setTimeout(() => socket.destroy(), answerAfterInFlightMaxMs);
    cap.unref();
    socket.once("close", () => clearTimeout(cap));
    const afterInFlight = (message: InFlight): void => {
      // The next response in line is given the socket as this one finishes (Node's resOnFinish
      // runs first: it listened first).
      message.once("finish", () => {
        const next = inFlightOf(socket);
        if (next !== null && next !== message) return afterInFlight(next);
        clearTimeout(cap);
        answer(err, socket);
      });
      message.once("close", () => {
        if (inFlightOf(socket) === message) socket.destroy();
      });
    };
    afterInFlight(inFlight);
    return;
  }
  if (!socket.writable || inFlight?.headersSent === true) {
    socket.destroy();
    return;
  }
  answer(err, socket);
}

function answer(err: Error, socket: Socket): void {
  if (socket.destroyed || !socket.writable) return;
  const code = (err as NodeJS.ErrnoException).code;
  endWithError(
    socket,
    code === "ERR_HTTP_REQUEST_TIMEOUT"
      ? "request_timeout"
      : code === "HPE_HEADER_OVERFLOW"
        ? "headers_too_large"
        : "bad_request",
  );
}

/** Answers a socket Node handed over unparsed with one of the contract's errors, then closes it. */
export function endWithError(socket: Socket, name: ErrorName): void {
  socket.end(rawErrorResponse(name));
  // A client that does not read its answer must not hold the socket either.
  socket.setTimeout(1_000, () => socket.destroy());
}
