// Checks every route's input gets before its schema: an unreadable body, query values that
// PostgreSQL could not store or that were not sent as UTF-8, and path parameters that name
// nothing. After authentication, after routing: a path that does not exist, or a method it does
// not serve, is a 404 or 405 whatever the request holds (docs/errors.md, "Order of checks").

import type { FieldError } from "@counterpart/protocol";
import type { FastifyInstance, FastifyRequest } from "fastify";
import { checkString } from "../platform/text.ts";
import { decodeUtf8 } from "./body-parsing.ts";
import { HttpError, validationError } from "./http-error.ts";

/** Route config of the handlers that answer 405: they take no input. */
export const methodNotAllowedRoute = { methodNotAllowed: true } as const;

/**
 * The text a percent-encoded piece of a raw target stands for, or null when it is not cleanly
 * encoded: a byte outside visible ASCII sent as is, a `%` not followed by two hex digits, or
 * escapes that do not decode to UTF-8. Decoding never replaces a byte it cannot read.
 */
export function percentDecoded(text: string): string | null {
  // Visible ASCII without an escape stands for itself: nothing to decode (most queries; a decode
  // costs about 1 µs a piece, this scan a few ns).
  let plain = true;
  for (let i = 0; i < text.length && plain; i++) {
    const c = text.charCodeAt(i);
    plain = c !== 0x25 && c >= 0x21 && c <= 0x7e;
  }
  if (plain) return text;
  const bytes = new Uint8Array(text.length);
  let n = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x25) {
      const hex = text.slice(i + 1, i + 3);
      if (!/^[0-9A-Fa-f]{2}$/.test(hex)) return null;
      bytes[n++] = Number.parseInt(hex, 16);
      i += 2;
    } else if (c < 0x21 || c > 0x7e) {
      return null;
    } else {
      bytes[n++] = c;
    }
  }
  return decodeUtf8(bytes.subarray(0, n));
}

const notUtf8 = (loc: (string | number)[]): FieldError => ({
  loc,
  msg: "Input should be percent-encoded UTF-8",
  type: "string_unicode",
});

/**
 * The query string as sent: each name and value must be cleanly percent-encoded UTF-8 (`+` is a
 * space). The query parser would otherwise keep `%FF` as the three characters `%FF`, so two
 * different requests would ask for the same value.
 */
function rawQueryProblem(rawUrl: string): FieldError | null {
  const q = rawUrl.indexOf("?");
  if (q === -1) return null;
  for (const piece of rawUrl.slice(q + 1).split("&")) {
    if (piece === "") continue;
    const eq = piece.indexOf("=");
    const rawName = eq === -1 ? piece : piece.slice(0, eq);
    const name = percentDecoded(rawName.replace(/\+/g, "%20"));
    if (name === null) return notUtf8(["query", rawName]);
    if (eq !== -1 && percentDecoded(piece.slice(eq + 1).replace(/\+/g, "%20")) === null) {
      return notUtf8(["query", name]);
    }
  }
  return null;
}

function inputProblem(request: FastifyRequest): FieldError[] | null {
  if (request.bodyError !== null) return request.bodyError;
  const query = rawQueryProblem(request.raw.url ?? "");
  if (query !== null) return [query];
  const values = request.query;
  if (values === null || typeof values !== "object") return null;
  for (const [name, value] of Object.entries(values as Record<string, unknown>)) {
    for (const v of Array.isArray(value) ? value : [value]) {
      const problem = typeof v === "string" ? checkString(v, ["query", name]) : null;
      if (problem !== null) return [problem];
    }
  }
  return null;
}

/**
 * Whether a path parameter names nothing the service could hold: an empty one (the router matches
 * `/asset-pairs/` and `/clients//documents`), or one with a NUL (`%00`) or broken Unicode, which
 * no body or query may store. Such a path names no record, like `/orders/abc`: a 404, not a 422.
 */
function namesNothing(params: unknown): boolean {
  if (params === null || typeof params !== "object") return false;
  return Object.values(params as Record<string, unknown>).some(
    (v) => typeof v === "string" && (v === "" || checkString(v, []) !== null),
  );
}

/**
 * Unreadable bodies, NUL characters and broken Unicode in a body or query: 422, after
 * authentication. The same in a path parameter is a 404 (`namesNothing`).
 */
export function addInputChecks(app: FastifyInstance): void {
  app.addHook("preValidation", async (request) => {
    if (request.is404 || request.routeOptions.config?.methodNotAllowed === true) return;
    if (namesNothing(request.params)) throw new HttpError("not_found");
    const problem = inputProblem(request);
    if (problem === null) return;
    if (request.routeOptions.config?.unreadableInputIsNotFound === true) throw new HttpError("not_found");
    throw validationError(problem);
  });
}
