// A signed read's authentication confirmed by the read's own statement (docs/decisions.md,
// "Authentication in the read's statement"). A read judged by the credentials its process kept is
// not yet authenticated: the statement that reads its data also reads the partner's credentials
// as that statement's snapshot sees them, through `column`, and hands them to `observe`. The
// request is answered only once they are found to accept it, so a disabled partner, a retired key
// or a new allow-list takes effect at once in every process, as when the credentials are read by a
// statement of their own, for one statement less.

import type { RawBuilder, SelectQueryBuilder } from "kysely";
import { type Db, executePrepared } from "./database.ts";

export interface CredentialWitness {
  /** A column giving the partner's credentials (JSON; null when there is no such partner). */
  readonly column: RawBuilder<unknown>;
  /** Takes the column's value from a row the statement returned. */
  observe(value: unknown): void;
}

/** The name the witness's column is selected as. */
export const witnessColumn = "partner_credentials";

/**
 * Runs a hot read as a prepared statement (executePrepared); with a witness, the statement also
 * carries the partner's credentials, which the witness observes from its first row. `firstRowOnly`
 * wraps the column so that only the statement's first row carries them (the others: null), for a
 * statement of many rows.
 */
export async function selectWitnessed<DB, TB extends keyof DB, O>(
  db: Db,
  query: SelectQueryBuilder<DB, TB, O>,
  witness: CredentialWitness | undefined,
  firstRowOnly?: (column: RawBuilder<unknown>) => RawBuilder<unknown>,
): Promise<O[]> {
  if (witness === undefined) return executePrepared(db, query);
  const column = firstRowOnly === undefined ? witness.column : firstRowOnly(witness.column);
  const rows = await executePrepared(db, query.select(column.as(witnessColumn)));
  const first = rows[0] as Record<string, unknown> | undefined;
  if (first !== undefined) witness.observe(first[witnessColumn]);
  return rows;
}
