// A quote executed by the process that made it, with the quote and the client's facts it kept,
// witnessed in the order's statement (migration 0023, docs/decisions.md "An execute by the quote its
// process kept"), against the same execute with the quote and the client read by a statement of
// their own, the reference (the service's path before, and still for a quote another process made):
// the same TradingService, given kept quotes that never give one back. An operation is a quote and
// its execute (the quote is the same on both sides). Measured as bench/kept-vs-read.ts says.
//
// Environment (besides run.ts's): BENCH_DATABASE_URL (see deposits.ts); BENCH_ROUNDS (default 4);
// BENCH_EXECUTE_PAIRS quote → execute pairs per slice on PostgreSQL (default 1,000; PGlite a
// quarter of it).

import { type KeptQuote, KeptQuotes } from "../../packages/server/src/modules/trading/kept-quotes.ts";
import { TradingService } from "../../packages/server/src/modules/trading/trading-service.ts";
import { systemClock } from "../../packages/server/src/platform/clock.ts";
import { systemRandom } from "../../packages/server/src/platform/random.ts";
import { runKeptVsRead } from "../kept-vs-read.ts";
import type { Scenario } from "../lib.ts";
import { pricedAndFunded } from "../trading-fixtures.ts";

const clientCount = 16;

/** Gives no quote back: every execute reads its quote and client, as before migration 0023. */
class NothingKept extends KeptQuotes {
  override get(): KeptQuote | undefined {
    return undefined;
  }
}

export const executeKept: Scenario = {
  name: "execute-kept",
  description:
    "a quote's execute by the quote and client its process kept, witnessed in the order's statement, against read by a statement of their own (CPU per quote → execute pair, in process, PGlite and PostgreSQL)",

  run: (ctx) =>
    runKeptVsRead(ctx, {
      name: "execute-kept",
      op: "quote → execute pair",
      what: "quote",
      opsEnv: "BENCH_EXECUTE_PAIRS",
      opsDefault: 1_000,
      clients: clientCount,
      async sides(database, partnerId) {
        const db = database.db;
        await pricedAndFunded(db, partnerId, clientCount, "execute-kept");
        // Prices stay fresh for the whole run: staleness is not what is measured.
        const options = { priceStaleAfterSeconds: 86_400 };
        let pairs = 0;
        const trades = (service: TradingService, name: string) => async (n: number) => {
          for (let i = 0; i < n; i++) {
            pairs += 1;
            const partnerClientId = `client-${1 + (pairs % clientCount)}`;
            const q = await service.quote(partnerId, {
              partnerClientId,
              pairId: "BTC-AED",
              side: "buy",
              baseAmount: 1_000_000n,
            });
            if (!q.ok) throw new Error(`execute-kept: a quote (${name}) answered ${q.error}`);
            const token = q.quote.token;
            if (token === null) throw new Error("execute-kept: a quote without its token");
            const e = await service.execute(partnerId, {
              partnerClientId,
              token,
              partnerOrderRef: `execute-kept-${pairs}`,
            });
            if (!e.ok) throw new Error(`execute-kept: an execute (${name}) answered ${e.error}`);
            if (e.order.status !== "completed")
              throw new Error(`execute-kept: an execute (${name}) made an order ${e.order.status}`);
          }
        };
        return {
          kept: trades(new TradingService(db, systemClock, systemRandom, options), "kept"),
          read: trades(new TradingService(db, systemClock, systemRandom, options, new NothingKept()), "read"),
        };
      },
    }),
};
