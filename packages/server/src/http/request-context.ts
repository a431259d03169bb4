// What the HTTP layer learns about a request before the handler runs.

import type { FieldError } from "@counterpart/protocol";
import type { CredentialCheck, RateClass, SignedWrite } from "../modules/partners/index.ts";

/**
 * A request authenticated by the credentials its process kept, not yet by the partner's row: a
 * read (CredentialCheck) or a write whose statement records its signature (SignedWrite).
 */
export interface PendingCredentials {
  check: CredentialCheck | SignedWrite;
  /** The budget the request was taken from (null: rate limits off), to be checked again by the row's. */
  rateClass: RateClass | null;
  limit: number | null;
}

declare module "fastify" {
  interface FastifyRequest {
    /** The body bytes exactly as received; null when the request had no body. */
    rawBody: Buffer | null;
    /** A body that could not be parsed; reported as a 422 after authentication. */
    bodyError: FieldError[] | null;
    /** The authenticated partner of a signed request. */
    partnerId: string | null;
    /** Set while the request's authentication waits on the partner's row (http/signature-auth.ts). */
    credentialCheck: PendingCredentials | null;
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
    /**
     * Set on signed GET routes whose statement carries the partner's credentials (the hot reads):
     * a request the process's kept credentials accept is authenticated by that statement instead
     * of one of its own (db/credential-witness.ts). The route must hand `credentialWitness(request)`
     * to the statement; when it cannot (an answer before it, a statement that returns no row), the
     * answer is held until the credentials are read. Its handler runs before the row confirms the
     * request, so it must change nothing: only a GET may be witnessed (app.ts refuses any other
     * when the app is built), and credential-witness.test.ts checks the database after each.
     */
    witnessesCredentials?: boolean;
    /**
     * Set on signed state-changing routes whose one write records the request's signature in its
     * own statement (modules/partners, SignedWrite). The route must hand `signedWrite(request)` to
     * that statement and tell it what the statement did; whatever ends otherwise is settled by the
     * partner's row, its signature recorded, before the answer leaves.
     */
    recordsSignature?: boolean;
  }
}
