// The quotes a process made, kept until executed (docs/decisions.md, "An execute by the quote its
// process kept"): by the hash of the token (never the token itself), the quote's terms and the
// client's facts it was judged on. An execute of that token, for the same partner's client, is
// judged by them; its order's statement checks that the client's row still holds them
// (client_standing_held(), migration 0023), and execute_quote() spends the quote only if it is
// still unspent and unexpired, and only with its own terms.

import { limits } from "../../config/limits.ts";
import { checkedBound, putBounded } from "../../platform/bounded-map.ts";
import type { QuoteTerms, TradingClient } from "./trading-store.ts";

export interface KeptQuote {
  partnerId: string;
  /** The client's facts the quote was judged on (they let it through). */
  client: Readonly<TradingClient>;
  terms: Readonly<QuoteTerms>;
}

export class KeptQuotes {
  readonly #quotes = new Map<string, KeptQuote>();
  readonly #max: number;

  constructor(max: number = limits.quotesKeptMax) {
    this.#max = checkedBound(max, "kept quotes");
  }

  /** The quote kept for this token's hash, if any. */
  get(tokenHash: Buffer): KeptQuote | undefined {
    return this.#quotes.get(key(tokenHash));
  }

  /** Keeps a quote just stored; past the bound, the oldest kept goes. */
  keep(tokenHash: Buffer, quote: KeptQuote): void {
    const kept = Object.freeze({
      partnerId: quote.partnerId,
      client: Object.freeze({ ...quote.client }),
      terms: Object.freeze({ ...quote.terms }),
    });
    putBounded(this.#quotes, key(tokenHash), kept, this.#max);
  }

  /** Forgets the quote of this token's hash (spent, no longer spendable, or its client changed). */
  forget(tokenHash: Buffer): void {
    this.#quotes.delete(key(tokenHash));
  }

  /** How many quotes are kept (for tests and the bound). */
  get size(): number {
    return this.#quotes.size;
  }
}

function key(tokenHash: Buffer): string {
  return tokenHash.toString("base64");
}
