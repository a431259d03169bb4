// The facts a process keeps between quotes (docs/decisions.md, "A quote by the facts its process
// kept"): a client's standing and a pair as its partner sees it, as read from their rows for a
// quote they let through (the client passed, the pair tradable and its price fresh). A later quote
// of the same client and pair is priced and judged by them, and its statement reads the rows again
// and stores the quote only when they still hold them, the price is still fresh and the client's
// funds cover it (insertQuoteIfHeld(), trading-store.ts); when they do not, nothing is written and
// the request is judged by the facts that statement read, which are kept in their place.

import { limits } from "../../config/limits.ts";
import { checkedBound, putBounded } from "../../platform/bounded-map.ts";
import type { TradingClient, TradingPair } from "./trading-store.ts";

/** A pair as its partner saw it, without its staleness: the quote's statement judges that. */
export type KeptPair = Omit<TradingPair, "stale">;

/** The facts a quote is judged on by its process, but for the client's funds. */
export interface HeldQuoteFacts {
  client: Readonly<TradingClient>;
  pair: Readonly<KeptPair>;
}

export class KeptQuoteFacts {
  readonly #clients = new Map<string, Readonly<TradingClient>>();
  readonly #pairs = new Map<string, Readonly<KeptPair>>();
  readonly #max: number;

  constructor(max: number = limits.quoteFactsKeptMax) {
    this.#max = checkedBound(max, "kept quote facts");
  }

  /** The facts kept for this partner's client and pair, when both are kept. */
  get(partnerId: string, partnerClientId: string, pairId: string): HeldQuoteFacts | undefined {
    const client = this.#clients.get(key(partnerId, partnerClientId));
    if (client === undefined) return undefined;
    const pair = this.#pairs.get(key(partnerId, pairId));
    if (pair === undefined) return undefined;
    return { client, pair };
  }

  /** Keeps the facts just read from the rows; past the bound, the oldest kept goes. */
  keep(partnerId: string, partnerClientId: string, client: TradingClient, pair: TradingPair): void {
    const { stale: _stale, ...kept } = pair;
    putBounded(this.#clients, key(partnerId, partnerClientId), Object.freeze({ ...client }), this.#max);
    putBounded(this.#pairs, key(partnerId, pair.id), Object.freeze(kept), this.#max);
  }

  /** Forgets what was kept of this client and pair (their rows no longer hold it, or may not). */
  forget(partnerId: string, partnerClientId: string, pairId: string): void {
    this.#clients.delete(key(partnerId, partnerClientId));
    this.#pairs.delete(key(partnerId, pairId));
  }

  /** How many clients and pairs are kept (for tests and the bound). */
  get size(): { clients: number; pairs: number } {
    return { clients: this.#clients.size, pairs: this.#pairs.size };
  }
}

/** A partner's id is a UUID (fixed length, no colon), so the key cannot be ambiguous. */
function key(partnerId: string, id: string): string {
  return `${partnerId}:${id}`;
}
