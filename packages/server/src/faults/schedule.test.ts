// The fault schedule is a function of the seed: the same seed replays the same faults in the same
// order with the same pauses, and every kind is scheduled as often as asked.

import assert from "node:assert/strict";
import { test } from "node:test";
import { mulberry32, scheduleFaults } from "./schedule.ts";

const counts = { kill: 5, pg_restart: 1, terminate: 5 };
const options = { processes: 3, counts, firstAfterMs: 8_000 };

test("the same seed gives the same schedule, another seed another one", () => {
  const a = scheduleFaults(mulberry32(42), options);
  assert.deepEqual(scheduleFaults(mulberry32(42), options), a);
  assert.notDeepEqual(scheduleFaults(mulberry32(43), options), a);
});

test("every kind as often as asked, kills on existing processes, pauses within bounds", () => {
  for (let seed = 1; seed <= 200; seed++) {
    const s = scheduleFaults(mulberry32(seed), options);
    assert.equal(s.length, 11);
    for (const [kind, n] of Object.entries(counts)) assert.equal(s.filter((f) => f.kind === kind).length, n);
    assert.equal(s[0]!.afterMs, 8_000);
    for (const f of s.slice(1)) assert.ok(f.afterMs >= 13_000 && f.afterMs < 19_000, String(f.afterMs));
    for (const f of s) {
      if (f.kind === "kill") {
        assert.ok(f.process !== undefined && f.process >= 0 && f.process < 3);
        assert.ok(f.restartDelayMs >= 500 && f.restartDelayMs < 3_000);
      } else assert.equal(f.process, undefined);
    }
  }
});
