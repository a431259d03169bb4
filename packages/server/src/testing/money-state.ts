// What a failed money request must leave untouched: every order, posting and account row.

import { sql } from "kysely";
import type { Db } from "../db/database.ts";

export interface MoneyState {
  orders: number;
  postings: number;
  accounts: string;
}

export async function moneyState(db: Db): Promise<MoneyState> {
  const { rows } = await sql<{ orders: number; postings: number; accounts: string | null }>`
    SELECT (SELECT count(*) FROM orders)::int8 AS orders,
           (SELECT count(*) FROM postings)::int8 AS postings,
           (SELECT string_agg(id || ':' || balance || ':' || held, ',' ORDER BY id) FROM accounts) AS accounts
  `.execute(db);
  const r = rows[0]!;
  return { orders: Number(r.orders), postings: Number(r.postings), accounts: r.accounts ?? "" };
}
