// What the HTTP layer learns about a request before the handler runs.

import type { FieldError } from "@counterpart/protocol";

declare module "fastify" {
  interface FastifyRequest {
    /** The body bytes exactly as received; null when the request had no body. */
    rawBody: Buffer | null;
    /** A body that could not be parsed; reported as a 422 after authentication. */
    bodyError: FieldError[] | null;
    /** The authenticated partner of a signed request. */
    partnerId: string | null;
  }
  interface FastifyContextConfig {
    /** Set on the routes that answer 405: they take no input to check. */
    methodNotAllowed?: boolean;
    /**
     * Set on routes whose path and query are a credential (document download links): input that
     * fails the checks (a NUL, broken Unicode) is the route's 404, like any other altered link,
     * so a guess learns nothing from the answer.
     */
    unreadableInputIsNotFound?: boolean;
  }
}
