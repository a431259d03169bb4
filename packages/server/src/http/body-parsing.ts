// Body parsers that keep the exact bytes for the signature (DESIGN: the raw body is hashed before
// anything parses it) and turn unreadable JSON into a 422 that is reported only after
// authentication has had its say.

import type { FieldError } from "@counterpart/protocol";
import type { FastifyInstance, FastifyRequest } from "fastify";
import { limits } from "../config/limits.ts";

const jsonInvalid = (msg: string, loc: (string | number)[] = ["body"]): FieldError[] => [
  { loc, msg, type: "json_invalid" },
];

export function registerBodyParsers(app: FastifyInstance): void {
  app.removeAllContentTypeParsers();
  app.addContentTypeParser(
    "application/json",
    { parseAs: "buffer", bodyLimit: limits.jsonBodyBytesMax },
    (request: FastifyRequest, body: Buffer, done: (err: Error | null, body?: unknown) => void) => {
      request.rawBody = body;
      if (body.length === 0) {
        done(null, undefined);
        return;
      }
      let parsed: unknown;
      try {
        parsed = JSON.parse(body.toString("utf8"));
      } catch (err) {
        request.bodyError = jsonInvalid(`Invalid JSON: ${(err as Error).message}`);
        done(null, undefined);
        return;
      }
      const problem = checkJsonValue(parsed);
      if (problem !== null) {
        request.bodyError = [problem];
        done(null, undefined);
        return;
      }
      done(null, parsed);
    },
  );
  // Any other media type: the bytes are kept for the signature; the route's schema then finds no
  // usable body. Multipart routes register their own handling.
  app.addContentTypeParser(
    "*",
    { parseAs: "buffer", bodyLimit: limits.jsonBodyBytesMax },
    (request: FastifyRequest, body: Buffer, done: (err: Error | null, body?: unknown) => void) => {
      request.rawBody = body;
      done(null, undefined);
    },
  );
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

export function checkString(value: string, loc: (string | number)[]): FieldError | null {
  if (value.includes("\u0000")) {
    return { loc, msg: "String should not contain NUL characters", type: "string_nul" };
  }
  if (!value.isWellFormed()) {
    return {
      loc,
      msg: "Input should be a valid string, unable to parse raw data as a unicode string",
      type: "string_unicode",
    };
  }
  return null;
}
