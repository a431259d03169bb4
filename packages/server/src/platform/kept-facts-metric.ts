// How the requests that can be judged by facts their process kept were judged (docs/decisions.md,
// "Funding facts witnessed in the order's statement", "A quote by the facts its process kept" and
// "An execute by the quote its process kept"): an operator reads from it whether the one-statement
// paths serve the deployment, e.g. whether a partner's executes reach the process that made their
// quotes, or whether a price feed changes the pairs faster than quotes come.

import { Counter } from "prom-client";

export type KeptFactsUse = "deposit" | "withdrawal" | "quote" | "execute";

/**
 * kept: judged by the facts kept, which the order's (or quote's) statement found still true;
 * changed: the statement found them changed, and the request was judged again by the rows; read:
 * none kept (the first of a client, an asset or a pair in the process, another process's quote,
 * one evicted by the bound, a quote the kept facts would refuse), judged by the rows.
 */
export type KeptFactsOutcome = "kept" | "changed" | "read";

export type KeptFactsCounter = Counter<"use" | "outcome">;

/** The counter, every series at 0 from the start; the caller registers it (main.ts). */
export function keptFactsCounter(): KeptFactsCounter {
  const counter = new Counter({
    name: "counterpart_kept_facts_total",
    help: "Deposits, withdrawals, quotes and executes by how their facts were judged: kept by the process and witnessed by the order's or quote's statement (kept), kept but changed and read again (changed), or read (read)",
    labelNames: ["use", "outcome"],
    registers: [],
  });
  for (const use of ["deposit", "withdrawal", "quote", "execute"] as const)
    for (const outcome of ["kept", "changed", "read"] as const) counter.inc({ use, outcome }, 0);
  return counter;
}
