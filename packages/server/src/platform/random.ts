// Randomness as a port, so ids and tokens can be made reproducible in tests.

import crypto from "node:crypto";

export interface Random {
  bytes(count: number): Buffer;
  uuid(): string;
}

/**
 * Bytes for small requests (a quote's token, a key) are taken from a pool filled by the
 * cryptographically secure generator 4 KiB at a time, as Node's own randomUUID() keeps its entropy:
 * one call into OpenSSL per 128 tokens instead of one per token (`crypto.randomBytes(32)` cost
 * about 5 µs a call, the pooled form 0.15; docs/decisions.md, "Random bytes from a pool"). Every
 * byte of the pool is handed out once, copied out of it, and the pool is refilled before any is
 * handed out again. A larger request goes to the generator directly.
 */
const poolBytes = 4096;
const pooledAtMost = 64;
const pool = Buffer.alloc(poolBytes);
let poolOffset = poolBytes;

function randomBytes(count: number): Buffer {
  if (count > pooledAtMost) return crypto.randomBytes(count);
  if (!Number.isInteger(count) || count < 0) throw new RangeError(`random: ${count} is not a byte count`);
  if (poolOffset + count > poolBytes) {
    crypto.randomFillSync(pool);
    poolOffset = 0;
  }
  const out = Buffer.allocUnsafe(count);
  pool.copy(out, 0, poolOffset, poolOffset + count);
  poolOffset += count;
  return out;
}

export const systemRandom: Random = {
  bytes: randomBytes,
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
