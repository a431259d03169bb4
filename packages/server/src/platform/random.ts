// Randomness as a port, so ids and tokens can be made reproducible in tests.

import crypto from "node:crypto";

export interface Random {
  bytes(count: number): Buffer;
  uuid(): string;
}

export const systemRandom: Random = {
  bytes: (count) => crypto.randomBytes(count),
  uuid: () => crypto.randomUUID(),
};

/**
 * mulberry32: a small, fast, seedable generator of numbers in [0, 1); the same seed gives the same
 * sequence. For simulations and test schedules (the price feed, the fault test), never for secrets.
 */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
