// A deposit's facts kept and witnessed in the order's statement (migration 0022, docs/decisions.md
// "Funding facts witnessed in the order's statement") against the same deposit with its facts read
// by a statement of their own, the reference (the service's path before, and still for a client or
// an asset a process has not kept): the same FundingService, given kept facts that never keep
// anything. Measured as bench/kept-vs-read.ts says.
//
// Environment (besides run.ts's): BENCH_DATABASE_URL (see deposits.ts); BENCH_ROUNDS (default 4);
// BENCH_FACTS_DEPOSITS deposits per slice on PostgreSQL (default 2,000; PGlite a quarter of it).

import { FundingService } from "../../packages/server/src/modules/funding/funding-service.ts";
import type { HeldFacts } from "../../packages/server/src/modules/funding/funding-store.ts";
import { KeptFundingFacts } from "../../packages/server/src/modules/funding/kept-facts.ts";
import { runKeptVsRead } from "../kept-vs-read.ts";
import type { Scenario } from "../lib.ts";

const clientCount = 16;

/** Keeps nothing: every request has its facts read, as before migration 0022. */
class NothingKept extends KeptFundingFacts {
  override get(): HeldFacts | undefined {
    return undefined;
  }
}

export const fundingFacts: Scenario = {
  name: "funding-facts",
  description:
    "a deposit's facts kept and witnessed in the order's statement against read by a statement of their own (CPU per deposit, in process, PGlite and PostgreSQL)",

  run: (ctx) =>
    runKeptVsRead(ctx, {
      name: "funding-facts",
      op: "deposit",
      what: "facts",
      opsEnv: "BENCH_FACTS_DEPOSITS",
      opsDefault: 2_000,
      clients: clientCount,
      async sides(database, partnerId) {
        let refs = 0;
        const deposits = (service: FundingService, name: string) => async (n: number) => {
          for (let i = 0; i < n; i++) {
            refs += 1;
            const r = await service.deposit(partnerId, {
              partnerClientId: `client-${1 + (refs % clientCount)}`,
              assetId: "AED",
              amount: 100_000_000n,
              partnerOrderRef: `facts-${refs}`,
            });
            if (!r.ok) throw new Error(`funding-facts: a deposit (${name}) answered ${r.error}`);
          }
        };
        return {
          kept: deposits(new FundingService(database.db), "kept"),
          read: deposits(new FundingService(database.db, new NothingKept()), "read"),
        };
      },
    }),
};
