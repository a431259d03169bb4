// One database transaction per use case. Serialisation failures and deadlocks are retried a
// bounded number of times; past that the caller gets a 503, never a partial commit.

import type { Transaction } from "kysely";
import { limits } from "../config/limits.ts";
import type { Db } from "./database.ts";
import { isRetryable } from "./errors.ts";
import type { Database } from "./schema.ts";

export type Tx = Transaction<Database>;

export class ServiceUnavailableError extends Error {
  constructor(cause: unknown) {
    super("transaction retries exhausted", { cause });
    this.name = "ServiceUnavailableError";
  }
}

export function inTransaction<T>(db: Db, work: (tx: Tx) => Promise<T>): Promise<T> {
  return withRetries(() => db.transaction().execute(work));
}

/**
 * Runs `attempt` (a transaction, or one statement that is its own transaction) again on a
 * serialisation failure or a deadlock, a bounded number of times.
 */
export async function withRetries<T>(attempt: () => Promise<T>): Promise<T> {
  for (let n = 0; ; n++) {
    try {
      return await attempt();
    } catch (err) {
      if (!isRetryable(err)) throw err;
      if (n >= limits.transactionRetriesMax) throw new ServiceUnavailableError(err);
    }
  }
}
