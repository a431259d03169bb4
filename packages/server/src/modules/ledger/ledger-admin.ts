// The operator's side of the ledger: the check that every balance is the sum of its postings.

import type { Db } from "../../db/database.ts";
import { checkLedger } from "./ledger-store.ts";
import type { LedgerDifference } from "./ledger-views.ts";

export class LedgerAdminService {
  readonly #db: Db;
  constructor(db: Db) {
    this.#db = db;
  }

  /** Every difference between the recorded balances and the postings; none when consistent. */
  check(): Promise<LedgerDifference[]> {
    return checkLedger(this.#db);
  }
}
