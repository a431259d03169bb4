// A signed read's authentication confirmed by the read's own statement (docs/decisions.md,
// "Authentication in the read's statement"). A read judged by the credentials its process kept is
// not yet authenticated: the statement that reads its data also reads the partner's credentials
// as that statement's snapshot sees them, through `column`, and hands them to `observe`. The
// request is answered only once they are found to accept it, so a disabled partner, a retired key
// or a new allow-list takes effect at once in every process, as when the credentials are read by a
// statement of their own, for one statement less.

import type { Kysely, RawBuilder, SelectQueryBuilder } from "kysely";
import { KeptStatement } from "./kept-statement.ts";
import type { Database } from "./schema.ts";

export interface CredentialWitness {
  /** The partner whose credentials the statement carries. */
  readonly partnerId: string;
  /**
   * A column giving the credentials of the partner `id` (JSON; null when there is no such
   * partner). The statement is built once per function (db/kept-statement.ts), with `id` a
   * parameter: it must build the same column for every witness that passes it.
   */
  column(id: string): RawBuilder<unknown>;
  /** Takes the column's value from a row the statement returned. */
  observe(value: unknown): void;
}

/** The name the witness's column is selected as. */
export const witnessColumn = "partner_credentials";

type Column = (id: string) => RawBuilder<unknown>;
type Build<DB, TB extends keyof DB, O, P, S> = (
  db: Kysely<Database>,
  p: P,
  shape: S,
) => SelectQueryBuilder<DB, TB, O>;
type Witnessed<P> = P & { readonly witnessPartnerId: string };

/**
 * A hot read, kept (db/kept-statement.ts) and run as a prepared statement; with a witness, the
 * statement also carries the partner's credentials, which the witness observes from its first row.
 * `firstRowOnly` wraps the column so that only the statement's first row carries them (the others:
 * null), for a statement of many rows.
 */
export class WitnessedRead<DB, TB extends keyof DB, O, P extends object, S extends string = ""> {
  readonly #build: Build<DB, TB, O, P, S>;
  readonly #firstRowOnly: ((column: RawBuilder<unknown>) => RawBuilder<unknown>) | undefined;
  readonly #plain: KeptStatement<P, O, S>;
  readonly #witnessed = new WeakMap<Column, KeptStatement<Witnessed<P>, O, S>>();

  constructor(
    build: Build<DB, TB, O, P, S>,
    firstRowOnly?: (column: RawBuilder<unknown>) => RawBuilder<unknown>,
  ) {
    this.#build = build;
    this.#firstRowOnly = firstRowOnly;
    this.#plain = new KeptStatement(build);
  }

  async select(db: Kysely<Database>, values: P, witness: CredentialWitness | undefined, shape = "" as S) {
    if (witness === undefined) return this.#plain.execute(db, values, shape);
    const rows = await this.#statement(witness.column).execute(
      db,
      { ...values, witnessPartnerId: witness.partnerId },
      shape,
    );
    const first = rows[0] as Record<string, unknown> | undefined;
    if (first !== undefined) witness.observe(first[witnessColumn]);
    return rows;
  }

  #statement(column: Column): KeptStatement<Witnessed<P>, O, S> {
    let statement = this.#witnessed.get(column);
    if (statement === undefined) {
      const wrap = this.#firstRowOnly ?? ((c: RawBuilder<unknown>) => c);
      statement = new KeptStatement<Witnessed<P>, O, S>((db, p, shape) =>
        this.#build(db, p, shape).select(wrap(column(p.witnessPartnerId)).as(witnessColumn)),
      );
      this.#witnessed.set(column, statement);
    }
    return statement;
  }
}
