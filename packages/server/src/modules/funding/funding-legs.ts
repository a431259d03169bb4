// The legs of a deposit or a withdrawal: the client's account against the partner's omnibus
// account in the client's house slot, in the order post_legs() locks them (docs/architecture.md,
// "Money").

import { houseSlot, type Leg, orderLegs } from "../ledger/index.ts";

/** The house slot and the legs, in lock order, of a deposit or withdrawal of `amount` (> 0). */
export function fundingLegs(
  type: "deposit" | "withdrawal",
  clientId: number,
  assetId: string,
  amount: bigint,
): { slot: number; legs: Leg[] } {
  if (amount <= 0n) throw new Error(`a funding amount must be positive: ${amount}`);
  const signed = type === "deposit" ? amount : -amount;
  const slot = houseSlot(clientId);
  const legs = orderLegs(
    [
      { kind: "client", clientId, assetId, amount: signed },
      { kind: "omnibus", clientId: null, assetId, amount: -signed },
    ],
    slot,
  );
  return { slot, legs };
}
