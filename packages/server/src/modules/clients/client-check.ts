// The one check every module that acts for a client runs first (docs/reference.md §3.1, §3.2, §7.3): the client
// must be the calling partner's (2008), verified (2009) and active (2010), in that order.

import type { Db } from "../../db/database.ts";
import type { Tx } from "../../db/transaction.ts";
import { findClientStanding } from "./clients-store.ts";

export interface ClientRef {
  id: number;
  partnerClientId: string;
}

export type ClientLookup = { ok: true; client: ClientRef } | { ok: false; error: "invalid_client" };

export type ClientCheck =
  | { ok: true; client: ClientRef }
  | { ok: false; error: "invalid_client" | "client_not_verified" | "client_deactivated" };

/** The partner's client, whatever its status: for reads (balances, orders, documents). Errors: 2008. */
export async function lookUpClient(
  db: Db | Tx,
  partnerId: string,
  partnerClientId: string,
): Promise<ClientLookup> {
  const row = await findClientStanding(db, partnerId, partnerClientId);
  if (row === undefined) return { ok: false, error: "invalid_client" };
  return { ok: true, client: { id: row.id, partnerClientId: row.partner_client_id } };
}

/** The rule of checkClientCanTransact on a row already read (for queries that read more at once). */
export function judgeClient(
  row: { id: number; partner_client_id: string; status: string; active: boolean } | undefined,
): ClientCheck {
  if (row === undefined) return { ok: false, error: "invalid_client" };
  if (row.status !== "verified") return { ok: false, error: "client_not_verified" };
  if (!row.active) return { ok: false, error: "client_deactivated" };
  return { ok: true, client: { id: row.id, partnerClientId: row.partner_client_id } };
}

/**
 * The partner's client, allowed to trade and be funded: for deposits, withdrawals, quotes and
 * execution. Errors: 2008, 2009, 2010.
 */
export async function checkClientCanTransact(
  db: Db | Tx,
  partnerId: string,
  partnerClientId: string,
): Promise<ClientCheck> {
  return judgeClient(await findClientStanding(db, partnerId, partnerClientId));
}
