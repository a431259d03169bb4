// A quote priced and judged by the client's and the pair's facts its process kept, witnessed in the
// quote's statement (migration 0024, docs/decisions.md "A quote by the facts its process kept"),
// against the same quote with the facts read by a statement of their own, the reference (the
// service's path before, and still for a process's first quote of a client or a pair): the same
// TradingService, given kept facts that never give any back. An operation is one quote. Measured as
// bench/kept-vs-read.ts says.
//
// Environment (besides run.ts's): BENCH_DATABASE_URL (see deposits.ts); BENCH_ROUNDS (default 4);
// BENCH_QUOTES quotes per slice on PostgreSQL (default 2,000; PGlite a quarter of it).

import {
  type HeldQuoteFacts,
  KeptQuoteFacts,
} from "../../packages/server/src/modules/trading/kept-quote-facts.ts";
import { KeptQuotes } from "../../packages/server/src/modules/trading/kept-quotes.ts";
import { TradingService } from "../../packages/server/src/modules/trading/trading-service.ts";
import { systemClock } from "../../packages/server/src/platform/clock.ts";
import { keptFactsCounter } from "../../packages/server/src/platform/kept-facts-metric.ts";
import { systemRandom } from "../../packages/server/src/platform/random.ts";
import { runKeptVsRead } from "../kept-vs-read.ts";
import type { Scenario } from "../lib.ts";
import { pricedAndFunded } from "../trading-fixtures.ts";

const clientCount = 16;

/** Gives no facts back: every quote reads its client and pair, as before migration 0024. */
class NothingKept extends KeptQuoteFacts {
  override get(): HeldQuoteFacts | undefined {
    return undefined;
  }
}

export const quoteKept: Scenario = {
  name: "quote-kept",
  description:
    "a quote by the client's and pair's facts its process kept, witnessed in the quote's statement, against read by a statement of their own (CPU per quote, in process, PGlite and PostgreSQL)",

  run: (ctx) =>
    runKeptVsRead(ctx, {
      name: "quote-kept",
      op: "quote",
      what: "facts",
      opsEnv: "BENCH_QUOTES",
      opsDefault: 2_000,
      clients: clientCount,
      async sides(database, partnerId) {
        const db = database.db;
        await pricedAndFunded(db, partnerId, clientCount, "quote-kept");
        // Prices stay fresh for the whole run: staleness is not what is measured.
        const options = { priceStaleAfterSeconds: 86_400 };
        let quotes = 0;
        const quoting = (service: TradingService, name: string) => async (n: number) => {
          for (let i = 0; i < n; i++) {
            quotes += 1;
            const q = await service.quote(partnerId, {
              partnerClientId: `client-${1 + (quotes % clientCount)}`,
              pairId: "BTC-AED",
              side: "buy",
              baseAmount: 1_000_000n,
            });
            if (!q.ok) throw new Error(`quote-kept: a quote (${name}) answered ${q.error}`);
          }
        };
        const service = (facts: KeptQuoteFacts) =>
          new TradingService(
            db,
            systemClock,
            systemRandom,
            options,
            new KeptQuotes(),
            keptFactsCounter(),
            facts,
          );
        return {
          kept: quoting(service(new KeptQuoteFacts()), "kept"),
          read: quoting(service(new NothingKept()), "read"),
        };
      },
    }),
};
