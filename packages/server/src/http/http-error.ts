// The only place that turns failures into HTTP. Services return expected failures as values with
// a catalog name; routes raise them as HttpError; anything else is a 500 whose details stay in the
// log.

import { type ErrorName, errorBody, errorCatalog, type FieldError } from "@counterpart/protocol";
import type { FastifyError, FastifyReply, FastifyRequest } from "fastify";
import { ServiceUnavailableError } from "../db/transaction.ts";
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

/**
 * PostgreSQL connection exceptions (class 08), too many connections (53300), and a server shutting
 * down or starting (57P01-57P03), and the socket errors of an unreachable server.
 */
export function isUnavailable(err: unknown): boolean {
  const code = typeof err === "object" && err !== null ? (err as { code?: unknown }).code : undefined;
  if (typeof code !== "string") return false;
  return (
    code.startsWith("08") ||
    code === "53300" ||
    code === "57P01" ||
    code === "57P02" ||
    code === "57P03" ||
    code === "ECONNREFUSED" ||
    code === "ECONNRESET" ||
    code === "ETIMEDOUT"
  );
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
    // The database refused or lost the connection: nothing was committed, and a retry with
    // backoff (spec §7.4) can succeed. Not a 500, which would suggest a bug.
    request.log.warn({ err: error }, "database unavailable");
    return sendError(reply, "service_unavailable");
  }
  switch (error.code) {
    case "FST_ERR_CTP_BODY_TOO_LARGE":
      return sendError(reply, "payload_too_large");
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
