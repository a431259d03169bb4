// An order's legs and the one order they are posted in (docs/architecture.md, "Money"). Pure: the
// services build legs with these rules, the stores hand them to the database's post_legs(), which
// checks the order again (migration 0011).

import type { AccountKind } from "../../db/schema.ts";

export interface Leg {
  kind: AccountKind;
  /** The client of a client account; null for the partner's house accounts. */
  clientId: number | null;
  assetId: string;
  /** Signed, at scale 8: positive credits the account's balance, negative debits it. */
  amount: bigint;
}

/**
 * House accounts per partner and asset are split into this many slots (migration 0006), as many as
 * the schema takes: a call of orders holds its slots' rows until it commits, and with 16 the other
 * process's call all but always wanted one of them (docs/decisions.md, "House slots: 64").
 */
export const houseSlots = 64;

/** The house slot an order of this client posts to. */
export function houseSlot(clientId: number): number {
  return clientId % houseSlots;
}

const kindRank: Record<AccountKind, number> = { client: 0, omnibus: 1, fee_revenue: 2, vat_payable: 3 };

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
