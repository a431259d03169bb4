// The operator's side of the ledger: the check that every balance is the sum of its postings.

import { limits } from "../../config/limits.ts";
import type { DatabaseHandle } from "../../db/database.ts";
import { checkLedgerInSnapshot } from "./ledger-store.ts";
import type { LedgerDifference } from "./ledger-views.ts";

export class LedgerAdminService {
  readonly #database: DatabaseHandle;
  readonly #boundMs: number;
  #running: Promise<LedgerDifference[]> | null = null;

  constructor(database: DatabaseHandle, options: { boundMs?: number } = {}) {
    this.#database = database;
    this.#boundMs = options.boundMs ?? limits.ledgerCheckMs;
  }

  /**
   * Every difference between the recorded balances and the postings; none when consistent. The
   * check reads every posting, on a connection of its own for up to `limits.ledgerCheckMs` in
   * all: while one runs, another call gets its answer rather than starting a second, so that
   * repeated requests (the admin API, the console's button) cannot take the pool's connections
   * away from the partners' requests.
   */
  check(): Promise<LedgerDifference[]> {
    if (this.#running === null) {
      const running = checkLedgerInSnapshot(this.#database, this.#boundMs);
      this.#running = running;
      const done = () => {
        if (this.#running === running) this.#running = null;
      };
      running.then(done, done);
    }
    return this.#running;
  }
}
