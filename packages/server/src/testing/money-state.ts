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

/**
 * Every row of every table of the service's schema, as one digest per table: what a request that
 * must change nothing is compared by, before and after.
 */
export async function databaseState(db: Db): Promise<string> {
  const tables = await sql<{ name: string }>`
    SELECT table_name AS name FROM information_schema.tables
    WHERE table_schema = current_schema() AND table_type = 'BASE TABLE' ORDER BY table_name
  `.execute(db);
  const digests: string[] = [];
  for (const { name } of tables.rows) {
    const { rows } = await sql<{ digest: string | null }>`
      SELECT md5(string_agg(t::text, '|' ORDER BY t::text)) AS digest FROM ${sql.table(name)} t
    `.execute(db);
    digests.push(`${name}: ${rows[0]?.digest ?? "empty"}`);
  }
  return digests.join("\n");
}
