// The double-entry core's queries: an order's legs as the arguments of the database's post_legs(),
// the client's balances, and the balances recomputed from postings for the ledger check. Balances
// change with single guarded statements, never read-modify-write in application memory.

import { type RawBuilder, sql } from "kysely";
import { type CredentialWitness, witnessColumn } from "../../db/credential-witness.ts";
import { type DatabaseHandle, type Db, preparedMarker, type ScriptRunner } from "../../db/database.ts";
import { moneyFromPg, moneyToPg } from "../../db/numeric.ts";
import type { Tx } from "../../db/transaction.ts";
import type { LedgerDifference } from "./ledger-views.ts";
import { type Leg, orderLegs } from "./legs.ts";

/**
 * The last five arguments of the database's post_legs() (migration 0008; it checks their order
 * itself since 0011), and of the functions that call it: the house slot and the legs, checked and
 * in lock order (`orderLegs`), as four arrays. post_legs() applies one order's legs: a client leg that would take the available balance
 * below zero fails the whole post, and nothing has been written when it does. With several client
 * legs (a trade), the client's accounts are first locked in asset order and every debit is checked
 * against them; a single client debit is one guarded update. Accounts are always locked in one
 * global order (client accounts by asset, then house accounts), so concurrent orders do not
 * deadlock.
 */
export function legArguments(legs: readonly Leg[], slot: number): RawBuilder<unknown> {
  const ordered = orderLegs(legs, slot);
  return sql`${slot}::smallint, ${ordered.map((l) => l.kind)}::text[], ${ordered.map((l) => l.clientId)}::bigint[],
             ${ordered.map((l) => l.assetId)}::text[], ${ordered.map((l) => moneyToPg(l.amount))}::numeric[]`;
}

export interface ClientBalanceRow {
  asset_id: string;
  balance: bigint;
  available: bigint;
}

/** The client's balance in every asset it holds (absent assets are zero). */
export async function clientBalances(db: Db | Tx, clientId: number): Promise<Map<string, ClientBalanceRow>> {
  const rows = await db
    .selectFrom("accounts")
    .select(["asset_id", "balance", "held"])
    .where("kind", "=", "client")
    .where("client_id", "=", clientId)
    .execute();
  const out = new Map<string, ClientBalanceRow>();
  for (const r of rows) {
    const balance = moneyFromPg(r.balance);
    out.set(r.asset_id, { asset_id: r.asset_id, balance, available: balance - moneyFromPg(r.held) });
  }
  return out;
}

/** One line of a client's balance sheet: an asset, what the client holds of it, its USD rate. */
export interface BalanceSheetLine {
  assetId: string;
  balance: bigint;
  available: bigint;
  /** The USD value of one unit at scale 8; 0 when the asset has none. */
  usdRate: bigint;
}

/**
 * A client's balances in one statement, for the balances reads: the client (by the partner's id
 * for it), every catalog asset (or the one named) in catalog order (fiat first, then by id), what
 * the client holds of each (zero without an account), and each asset's USD rate: 1 for USD, else
 * the sell price of ASSET-USD, else the catalog's reference rate. `undefined` when the partner has
 * no such client; `lines` is empty when the asset named is not in the catalog. Each account is read
 * by the whole key of accounts_owner_key (kind, partner, client, asset): without the partner,
 * PostgreSQL scanned every client account (docs/operations.md, "A trade's database side").
 */
export async function balanceSheet(
  db: Db,
  partnerId: string,
  partnerClientId: string,
  assetId: string | null,
  witness?: CredentialWitness,
): Promise<{ clientId: number; lines: BalanceSheetLine[] } | undefined> {
  const { rows } = await sql<{
    client_id: number;
    asset_id: string | null;
    balance: string | null;
    held: string | null;
    usd_rate: string | null;
    [witnessColumn]?: unknown;
  }>`${sql.raw(preparedMarker)}
    WITH c AS (SELECT id FROM clients WHERE partner_id = ${partnerId} AND partner_client_id = ${partnerClientId})
    SELECT c.id AS client_id, a.id AS asset_id, acc.balance, acc.held,
           CASE WHEN a.id = 'USD' THEN 1::numeric ELSE coalesce(p.sell, a.usd_rate) END AS usd_rate
           ${witness === undefined ? sql`` : sql`, ${witness.column(witness.partnerId)} AS ${sql.ref(witnessColumn)}`}
      FROM c
      LEFT JOIN assets a ON (${assetId}::text IS NULL OR a.id = ${assetId}::text)
      LEFT JOIN accounts acc ON acc.kind = 'client' AND acc.partner_id = ${partnerId}
                            AND acc.client_id = (SELECT id FROM c) AND acc.asset_id = a.id
      LEFT JOIN asset_pairs p ON p.base_id = a.id AND p.quote_id = 'USD'
     ORDER BY a.type DESC, a.id`.execute(db);
  const first = rows[0];
  if (first === undefined) return undefined;
  witness?.observe(first[witnessColumn]);
  const lines: BalanceSheetLine[] = [];
  for (const r of rows) {
    if (r.asset_id === null) continue;
    const balance = r.balance === null ? 0n : moneyFromPg(r.balance);
    const held = r.held === null ? 0n : moneyFromPg(r.held);
    lines.push({
      assetId: r.asset_id,
      balance,
      available: balance - held,
      usdRate: r.usd_rate === null ? 0n : moneyFromPg(r.usd_rate),
    });
  }
  return { clientId: first.client_id, lines };
}

/** The ledger check's statements: static text, so that any session can run them (ScriptRunner). */
const ledgerCheckText = {
  accounts: `
    SELECT a.id, a.kind, a.partner_id, a.client_id, a.asset_id, a.slot, a.balance::text AS balance,
           coalesce(sum(p.amount), 0)::numeric(38, 8)::text AS posted
    FROM accounts a LEFT JOIN postings p ON p.account_id = a.id
    GROUP BY a.id
    HAVING a.balance <> coalesce(sum(p.amount), 0)
    ORDER BY a.id`,
  orders: `
    SELECT order_id, asset_id, sum(amount)::text AS total FROM postings
    GROUP BY order_id, asset_id HAVING sum(amount) <> 0 ORDER BY order_id`,
  assets: `
    SELECT asset_id, sum(balance)::text AS total FROM accounts GROUP BY asset_id HAVING sum(balance) <> 0
    ORDER BY asset_id`,
};

/**
 * Recomputes every account's balance from its postings, and checks that each order and each asset
 * as a whole sums to zero. An empty list means the ledger is consistent. Each of its three
 * statements reads a snapshot of its own; the operator's check runs them in one
 * (checkLedgerInSnapshot).
 */
export function checkLedger(db: Db | Tx): Promise<LedgerDifference[]> {
  return checkLedgerWith(async (text) => (await sql.raw<Record<string, unknown>>(text).execute(db)).rows);
}

/**
 * The ledger check as the operator runs it (`GET /admin/ledger/check`, the console's Ledger page):
 * its three statements in one read-only snapshot, so that a write committed meanwhile is seen by
 * all or none of them, bounded together by `boundMs` (limits.ledgerCheckMs) rather than each by a
 * request's statement bound: it reads every posting.
 */
export function checkLedgerInSnapshot(
  database: DatabaseHandle,
  boundMs: number,
): Promise<LedgerDifference[]> {
  return database.withReadSnapshot(boundMs, checkLedgerWith);
}

async function checkLedgerWith(run: ScriptRunner): Promise<LedgerDifference[]> {
  const differences: LedgerDifference[] = [];
  const accounts = (await run(ledgerCheckText.accounts)) as {
    id: number;
    kind: string;
    partner_id: string;
    client_id: number | null;
    asset_id: string;
    slot: number;
    balance: string;
    posted: string;
  }[];
  for (const a of accounts) {
    differences.push({
      kind: "account_balance",
      account_id: a.id,
      account: `${a.kind}:${a.partner_id}${a.client_id === null ? `:slot-${a.slot}` : `:client-${a.client_id}`}:${a.asset_id}`,
      asset_id: a.asset_id,
      recorded: a.balance,
      from_postings: a.posted,
    });
  }
  const orders = (await run(ledgerCheckText.orders)) as {
    order_id: number;
    asset_id: string;
    total: string;
  }[];
  for (const o of orders) {
    differences.push({
      kind: "order_unbalanced",
      order_id: o.order_id,
      asset_id: o.asset_id,
      from_postings: o.total,
    });
  }
  const assets = (await run(ledgerCheckText.assets)) as { asset_id: string; total: string }[];
  for (const a of assets) {
    differences.push({ kind: "asset_unbalanced", asset_id: a.asset_id, recorded: a.total });
  }
  return differences;
}
