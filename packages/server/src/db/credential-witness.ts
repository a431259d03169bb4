// A signed read's authentication confirmed by the read's own statement (docs/decisions.md,
// "Authentication in the read's statement"). A read judged by the credentials its process kept is
// not yet authenticated: the statement that reads its data also reads the partner's credentials
// as that statement's snapshot sees them, through `column`, and hands them to `observe`. The
// request is answered only once they are found to accept it, so a disabled partner, a retired key
// or a new allow-list takes effect at once in every process, as when the credentials are read by a
// statement of their own, for one statement less.

import type { RawBuilder } from "kysely";

export interface CredentialWitness {
  /** A column giving the partner's credentials (JSON; null when there is no such partner). */
  readonly column: RawBuilder<unknown>;
  /** Takes the column's value from a row the statement returned. */
  observe(value: unknown): void;
}

/** The name the witness's column is selected as. */
export const witnessColumn = "partner_credentials";
