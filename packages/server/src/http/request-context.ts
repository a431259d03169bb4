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
}
