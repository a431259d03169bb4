// The system's random bytes, pooled for small requests (platform/random.ts): every request gets
// bytes of its own, never bytes handed out before, never a view the pool later overwrites, across
// the pool's refills; larger requests and the uuid pass through; a count that is no count is refused.

import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { systemRandom } from "./random.ts";

describe("systemRandom", () => {
  test("gives the bytes asked for, each draw its own, across many refills of the pool", () => {
    const draws: Buffer[] = [];
    const copies: string[] = [];
    // 2,000 tokens of 32 bytes: 64,000 bytes, the pool refilled some fifteen times.
    for (let i = 0; i < 2_000; i++) {
      const b = systemRandom.bytes(32);
      assert.equal(b.length, 32);
      draws.push(b);
      copies.push(b.toString("hex"));
    }
    assert.equal(new Set(copies).size, copies.length, "no two tokens alike");
    // A draw is a copy: the refills since have not changed one byte of any earlier draw.
    for (let i = 0; i < draws.length; i++) assert.equal(draws[i]!.toString("hex"), copies[i]);
    // No 8-byte run of one token turns up in another: no byte of the pool is handed out twice.
    const runs = new Set<string>();
    for (const hex of copies) {
      for (let at = 0; at + 16 <= hex.length; at += 16) {
        const run = hex.slice(at, at + 16);
        assert.ok(!runs.has(run), "an 8-byte run seen twice");
        runs.add(run);
      }
    }
  });

  test("odd sizes straddle a refill without overlap, and the bytes look uniform", () => {
    const sizes = [1, 3, 7, 12, 31, 33, 64];
    const all: Buffer[] = [];
    for (let i = 0; i < 3_000; i++) all.push(systemRandom.bytes(sizes[i % sizes.length]!));
    const joined = Buffer.concat(all);
    assert.equal(
      joined.length,
      all.reduce((n, b) => n + b.length, 0),
    );
    // Each byte value about equally often: 256 bins over ~65,000 bytes, chi-squared with 255
    // degrees of freedom; 400 is beyond its 99.999th percentile, a pool left unfilled is far above.
    const counts = new Array<number>(256).fill(0);
    for (const byte of joined) counts[byte]!++;
    const expected = joined.length / 256;
    const chi = counts.reduce((s, c) => s + (c - expected) ** 2 / expected, 0);
    assert.ok(chi < 400, `chi-squared ${chi.toFixed(1)}`);
  });

  test("larger requests, an empty one and the uuid", () => {
    const big = systemRandom.bytes(1_000);
    assert.equal(big.length, 1_000);
    assert.notDeepEqual(big, Buffer.alloc(1_000));
    assert.equal(systemRandom.bytes(0).length, 0);
    assert.match(
      systemRandom.uuid(),
      /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/,
    );
  });

  test("a count that is not a byte count is refused, and the pool still serves after", () => {
    for (const count of [-1, 1.5, Number.NaN]) {
      assert.throws(() => systemRandom.bytes(count), RangeError);
    }
    assert.equal(systemRandom.bytes(16).length, 16);
  });
});
