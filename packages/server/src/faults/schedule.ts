// The seeded parts of the bank test: a small PRNG (mulberry32), and the fault schedule drawn from
// it. The same FAULT_SEED gives the same faults in the same order, on the same processes, with the
// same pauses; only how long each heal takes depends on the machine.

import { seededRandom } from "../platform/random.ts";
import type { FaultKind } from "./history.ts";

export interface Rng {
  /** An integer in [0, n). */
  int(n: number): number;
}

export function mulberry32(seed: number): Rng {
  const next = seededRandom(seed);
  return { int: (n: number) => Math.floor(next() * n) };
}

export interface ScheduledFault {
  kind: FaultKind;
  /** Pause before injecting it: after the traffic starts for the first, after the previous heal for the others. */
  afterMs: number;
  /** kill: which API process. */
  process?: number;
  /** kill: how long the process stays down before it is started again. */
  restartDelayMs: number;
}

/**
 * The faults in a seeded order. Each comes 13 to 19 s after the previous one healed, so the
 * service is judged from 10 s after every heal on traffic that no other fault disturbs.
 */
export function scheduleFaults(
  rng: Rng,
  options: { processes: number; counts: Record<FaultKind, number>; firstAfterMs: number },
): ScheduledFault[] {
  const kinds: FaultKind[] = [];
  for (const [kind, n] of Object.entries(options.counts) as [FaultKind, number][]) {
    for (let i = 0; i < n; i++) kinds.push(kind);
  }
  for (let i = kinds.length - 1; i > 0; i--) {
    const j = rng.int(i + 1);
    [kinds[i], kinds[j]] = [kinds[j]!, kinds[i]!];
  }
  return kinds.map((kind, i) => ({
    kind,
    afterMs: i === 0 ? options.firstAfterMs : 13_000 + rng.int(6_000),
    ...(kind === "kill" ? { process: rng.int(options.processes) } : {}),
    restartDelayMs: kind === "kill" ? 500 + rng.int(2_500) : 0,
  }));
}
