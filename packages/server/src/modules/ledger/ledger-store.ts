// The double-entry core: posts an order's legs to accounts and postings in the caller's
// transaction, and recomputes balances from postings for the ledger check. Balances change with
// single guarded statements, never read-modify-write in application memory.

import { type RawBuilder, type Selectable, sql } from "kysely";
import { type Db, preparedMarker } from "../../db/database.ts";
import { moneyFromPg, moneyToPg } from "../../db/numeric.ts";
import type { AccountKind, OrdersTable } from "../../db/schema.ts";
import type { Tx } from "../../db/transaction.ts";

export interface Leg {
  kind: AccountKind;
  /** The client of a client account; null for the partner's house accounts. */
  clientId: number | null;
  assetId: string;
  /** Signed, at scale 8: positive credits the account's balance, negative debits it. */
  amount: bigint;
}

/** House accounts per partner and asset are split into this many slots (migration 0006). */
export const houseSlots = 16;

/** The house slot an order of this client posts to. */
export function houseSlot(clientId: number): number {
  return clientId % houseSlots;
}

const kindRank: Record<AccountKind, number> = { client: 0, omnibus: 1, fee_revenue: 2, vat_payable: 3 };

/**
 * The last five arguments of the database's post_legs() (migration 0008), and of the functions
 * that call it: the house slot and the legs, checked and in lock order (`orderLegs`), as four
 * arrays. post_legs() applies one order's legs: a client leg that would take the available balance
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

/**
 * Checks an order's legs (they balance per asset; client legs have a client, and one client at
 * most; no zero) and puts them in lock order: client accounts by asset, then house accounts by kind
 * and asset. Throws on a programming error.
 */
export function orderLegs(legs: readonly Leg[], slot: number): Leg[] {
  if (!Number.isInteger(slot) || slot < 0 || slot >= houseSlots) throw new Error(`bad house slot ${slot}`);
  const sums = new Map<string, bigint>();
  let client: number | null = null;
  for (const leg of legs) {
    if (leg.amount === 0n) throw new Error("a posting of zero");
    if ((leg.kind === "client") !== (leg.clientId !== null))
      throw new Error("client legs need a client, house legs none");
    if (leg.clientId !== null) {
      if (client !== null && client !== leg.clientId) throw new Error("one order, one client");
      client = leg.clientId;
    }
    sums.set(leg.assetId, (sums.get(leg.assetId) ?? 0n) + leg.amount);
  }
  for (const [asset, sum] of sums) if (sum !== 0n) throw new Error(`legs do not balance in ${asset}: ${sum}`);
  return [...legs].sort(
    (a, b) =>
      kindRank[a.kind] - kindRank[b.kind] || (a.assetId < b.assetId ? -1 : a.assetId > b.assetId ? 1 : 0),
  );
}

/** The SQLSTATE fund_order() raises when a withdrawal's available balance does not cover it. */
export const insufficientFundsCode = "CP001";

export interface FundingOrder {
  partnerId: string;
  clientId: number;
  ref: string;
  type: "deposit" | "withdrawal";
  assetId: string;
  /** > 0, at scale 8 */
  amount: bigint;
}

/**
 * Records a completed bank deposit or withdrawal and posts it (the client's account against the
 * partner's omnibus account in the client's house slot) in one statement, with the database's
 * fund_order() (migration 0008). Throws the database's error: SQLSTATE `insufficientFundsCode` for
 * a withdrawal the available balance does not cover, 23505 on orders_partner_order_ref_key for a
 * reference already taken. Nothing is written when it throws.
 */
export async function fundOrder(db: Db | Tx, order: FundingOrder): Promise<Selectable<OrdersTable>> {
  const { rows } = await sql<Selectable<OrdersTable>>`${sql.raw(preparedMarker)}
    SELECT * FROM fund_order(${order.partnerId}, ${order.clientId}, ${order.ref}, ${order.type},
                             ${order.assetId}, ${moneyToPg(order.amount)}::numeric,
                             ${houseSlot(order.clientId)}::smallint)
  `.execute(db);
  const row = rows[0];
  if (row === undefined) throw new Error("fund_order returned no order");
  return row;
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

export interface LedgerDifference {
  kind: "account_balance" | "order_unbalanced" | "asset_unbalanced";
  account_id?: number;
  account?: string;
  order_id?: number;
  asset_id: string;
  recorded?: string;
  from_postings?: string;
}

/**
 * Recomputes every account's balance from its postings, and checks that each order and each asset
 * as a whole sums to zero. An empty list means the ledger is consistent.
 */
export async function checkLedger(db: Db): Promise<LedgerDifference[]> {
  const differences: LedgerDifference[] = [];
  const accounts = await sql<{
    id: number;
    kind: string;
    partner_id: string;
    client_id: number | null;
    asset_id: string;
    slot: number;
    balance: string;
    posted: string;
  }>`
    SELECT a.id, a.kind, a.partner_id, a.client_id, a.asset_id, a.slot, a.balance::text AS balance,
           coalesce(sum(p.amount), 0)::numeric(38, 8)::text AS posted
    FROM accounts a LEFT JOIN postings p ON p.account_id = a.id
    GROUP BY a.id
    HAVING a.balance <> coalesce(sum(p.amount), 0)
    ORDER BY a.id
  `.execute(db);
  for (const a of accounts.rows) {
    differences.push({
      kind: "account_balance",
      account_id: a.id,
      account: `${a.kind}:${a.partner_id}${a.client_id === null ? `:slot-${a.slot}` : `:client-${a.client_id}`}:${a.asset_id}`,
      asset_id: a.asset_id,
      recorded: a.balance,
      from_postings: a.posted,
    });
  }
  const orders = await sql<{ order_id: number; asset_id: string; total: string }>`
    SELECT order_id, asset_id, sum(amount)::text AS total FROM postings
    GROUP BY order_id, asset_id HAVING sum(amount) <> 0 ORDER BY order_id
  `.execute(db);
  for (const o of orders.rows) {
    differences.push({
      kind: "order_unbalanced",
      order_id: o.order_id,
      asset_id: o.asset_id,
      from_postings: o.total,
    });
  }
  const assets = await sql<{ asset_id: string; total: string }>`
    SELECT asset_id, sum(balance)::text AS total FROM accounts GROUP BY asset_id HAVING sum(balance) <> 0
  `.execute(db);
  for (const a of assets.rows) {
    differences.push({ kind: "asset_unbalanced", asset_id: a.asset_id, recorded: a.total });
  }
  return differences;
}
