// The funding facts a process keeps between requests (docs/decisions.md, "Funding facts witnessed
// in the order's statement"): a client's standing and an asset's flags, as read from their rows for
// a request they let through. A later request of the same client and asset is judged by them, and
// its order's statement checks that the rows still hold them (funding_facts_held(), migration
// 0022); when they do not, the facts are forgotten and read again.

import { limits } from "../../config/limits.ts";
import { checkedBound, putBounded } from "../../platform/bounded-map.ts";
import type { AssetFacts, ClientFacts, HeldFacts } from "./funding-store.ts";

export class KeptFundingFacts {
  readonly #clients = new Map<string, ClientFacts>();
  readonly #assets = new Map<string, AssetFacts>();
  readonly #max: number;

  constructor(max: number = limits.fundingFactsKeptMax) {
    this.#max = checkedBound(max, "kept funding facts");
  }

  /** The facts kept for this client and asset, when both are kept. */
  get(partnerId: string, partnerClientId: string, assetId: string): HeldFacts | undefined {
    const client = this.#clients.get(clientKey(partnerId, partnerClientId));
    if (client === undefined) return undefined;
    const asset = this.#assets.get(assetId);
    if (asset === undefined) return undefined;
    return { client, asset };
  }

  /** Keeps the facts just read from the rows; past the bound, the oldest kept goes. */
  keep(partnerId: string, partnerClientId: string, assetId: string, facts: HeldFacts): void {
    putBounded(
      this.#clients,
      clientKey(partnerId, partnerClientId),
      Object.freeze({ ...facts.client }),
      this.#max,
    );
    putBounded(this.#assets, assetId, Object.freeze({ ...facts.asset }), this.#max);
  }

  /** Forgets what was kept of this client and asset (their rows no longer hold it). */
  forget(partnerId: string, partnerClientId: string, assetId: string): void {
    this.#clients.delete(clientKey(partnerId, partnerClientId));
    this.#assets.delete(assetId);
  }

  /** How many clients and assets are kept (for tests and the bound). */
  get size(): { clients: number; assets: number } {
    return { clients: this.#clients.size, assets: this.#assets.size };
  }
}

/** A partner's id is a UUID (fixed length, no colon), so the key cannot be ambiguous. */
function clientKey(partnerId: string, partnerClientId: string): string {
  return `${partnerId}:${partnerClientId}`;
}
