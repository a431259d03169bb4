// The operator's ledger check: one at a time per process, in a snapshot bounded by
// limits.ledgerCheckMs (the snapshot itself is pinned in db/database.test.ts).

import assert from "node:assert/strict";
import { test } from "node:test";
import { limits } from "../../config/limits.ts";
import type { DatabaseHandle, ScriptRunner } from "../../db/database.ts";
import { LedgerAdminService } from "./ledger-admin.ts";

/** A handle whose snapshots wait until the test lets them go, counted with their bounds. */
function heldSnapshots() {
  const bounds: number[] = [];
  const waiting: { go: () => void; fail: (err: Error) => void }[] = [];
  const database = {
    withReadSnapshot: async <T>(boundMs: number, work: (run: ScriptRunner) => Promise<T>): Promise<T> => {
      bounds.push(boundMs);
      await new Promise<void>((go, fail) => waiting.push({ go, fail }));
      // A clean ledger: every statement of the check finds no row.
      return work(async () => []);
    },
  } as unknown as DatabaseHandle;
  return { database, bounds, waiting };
}

test("a ledger check asked for while one runs gets that one's answer; the next starts anew", async () => {
  const { database, bounds, waiting } = heldSnapshots();
  const ledger = new LedgerAdminService(database);
  const first = ledger.check();
  const second = ledger.check();
  assert.equal(second, first, "the same check");
  await new Promise((r) => setImmediate(r));
  assert.deepEqual(bounds, [limits.ledgerCheckMs], "one snapshot, bounded by limits.ledgerCheckMs");
  waiting[0]!.go();
  assert.deepEqual(await first, []);
  assert.deepEqual(await second, []);

  const third = ledger.check();
  assert.notEqual(third, first, "a new check once the last one answered");
  await new Promise((r) => setImmediate(r));
  assert.equal(bounds.length, 2);
  waiting[1]!.go();
  assert.deepEqual(await third, []);
});

test("a ledger check that fails fails every caller waiting on it, and the next one runs again", async () => {
  const { database, bounds, waiting } = heldSnapshots();
  const ledger = new LedgerAdminService(database, { boundMs: 1_234 });
  const first = ledger.check();
  const second = ledger.check();
  await new Promise((r) => setImmediate(r));
  waiting[0]!.fail(new Error("database unavailable"));
  await assert.rejects(first, /database unavailable/);
  await assert.rejects(second, /database unavailable/);
  const third = ledger.check();
  await new Promise((r) => setImmediate(r));
  assert.deepEqual(bounds, [1_234, 1_234]);
  waiting[1]!.go();
  assert.deepEqual(await third, []);
});
