// `npm run demo` (scripts/demo.ts) as a user runs it right after `npm start`: against a sandbox
// with the simulated price feed (prices move while it runs), twice at once (each run onboards its
// own client); then with the pair's price pinned an hour in the past, so stale (4001, said
// plainly); then right after `price resume` (priced at once); and with no sandbox running (one
// line saying to run `npm start` first, exit 1). Each run registers a webhook endpoint for a
// receiver of its own, shows the client's events delivered there and verified, and the feed caught
// up from a saved cursor; it removes the endpoint at the end, even when a step failed.

import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { test } from "node:test";
import { generateKeyPair } from "@counterpart/protocol";
import { assertOk, baseEnv, closedPort, type Run, runCli, runDemo, startSandbox } from "./testing.ts";

function onboardedId(out: string): string | undefined {
  return /^1\. Onboarded client (demo-\S+) /m.exec(out)?.[1];
}

/** The demo partner's webhook endpoints, through the signed API. */
async function endpointsLeft(env: NodeJS.ProcessEnv): Promise<unknown[]> {
  const r = await runCli(["call", "GET", "/v1/partner/webhook-endpoints", "--json"], env);
  assertOk(r);
  return (JSON.parse(r.stdout) as { body: { items: unknown[] } }).body.items;
}

function assertExit(r: Run, code: number, sandboxLog = ""): void {
  assert.equal(
    r.code,
    code,
    `exit ${r.code}\nstdout: ${r.stdout}\nstderr: ${r.stderr}${sandboxLog === "" ? "" : `\nsandbox log:\n${sandboxLog}`}`,
  );
}

/** Exit 1, nothing on stdout, one stderr line matching `pattern`. */
function assertOneLineFailure(r: Run, pattern: RegExp): void {
  assertExit(r, 1);
  assert.equal(r.stdout, "");
  const lines = r.stderr.split("\n").filter((l) => l !== "");
  assert.equal(lines.length, 1, `one stderr line, got:\n${r.stderr}`);
  assert.match(lines[0]!, pattern);
}

test("npm run demo", async (t) => {
  const live = await startSandbox(t, "counterpart-demo-", { priceFeed: "simulated" });

  await t.test("runs every step against the sandbox with the simulated feed, again and again", async () => {
    const runs = await Promise.all([runDemo(live.env), runDemo(live.env)]);
    const clients = runs.map((r) => {
      assertExit(r, 0, live.log());
      assert.equal(r.stderr, "");
      const out = r.stdout;
      assert.match(
        out,
        new RegExp(
          `^Counterpart demo: partner ${live.demo.partner_id} at ${live.endpoints.partner_url}$`,
          "m",
        ),
      );
      const onboarded = /^1\. Onboarded client (demo-\S+) \(Amal Demo, .*\): verified, active$/m.exec(out);
      assert.ok(onboarded, out);
      assert.match(out, /^2\. Uploaded government_id document #\d+ \(government-id\.png, \d+ bytes\)$/m);
      assert.match(out, /^3\. Deposited 50000\.00 AED: order ORD-\S+ completed; available 50000\.00 AED$/m);
      assert.match(
        out,
        /^4\. Quoted a buy of 0\.05 BTC at [\d.]+ AED: [\d.]+ AED \+ fee [\d.]+ AED, valid \d+ s$/m,
      );
      assert.match(
        out,
        /^5\. Bought 0\.05 BTC for [\d.]+ AED plus fee [\d.]+ AED at [\d.]+, at the quoted price: order ORD-\S+ completed$/m,
      );
      assert.match(out, /^6\. Quoted a sell of 0\.02 BTC at /m);
      assert.match(
        out,
        /^7\. Sold 0\.02 BTC for [\d.]+ AED less fee [\d.]+ AED at [\d.]+, at the quoted price: order ORD-\S+ completed$/m,
      );
      assert.match(out, /^8\. Withdrew 10000\.00 AED: order ORD-\S+ completed; available [\d.]+ AED$/m);
      // Events: the endpoint, the saved cursor, the six deliveries verified, the feed caught up.
      const hook =
        /^ {2}Webhook endpoint ([0-9a-f-]{36}) registered: a receiver at (http:\/\/127\.0\.0\.1:\d+\/\S+)$/m.exec(
          out,
        );
      assert.ok(hook, out);
      const cursor = /^ {3}Feed cursor saved: (evt_[A-Za-z0-9_-]{22}) \(client\.created\)$/m.exec(out);
      assert.ok(cursor, out);
      const hooks = new RegExp(
        `^Webhooks: 6 events of (demo-\\S+) delivered to ${hook[2]!.replace(/[.]/g, "\\.")}, each signature verified \\(key whk_[A-Za-z0-9_-]{16}\\):\n((?: {2}.*\n)+)`,
        "m",
      ).exec(out);
      assert.ok(hooks, out);
      assert.equal(hooks[1], onboardedId(out));
      const deliveredRows = hooks[2]!
        .trimEnd()
        .split("\n")
        .slice(1)
        .map((row) => row.trim().split(/ +/));
      assert.deepEqual(
        deliveredRows.map((r) => r[1]),
        ["client.created", "document.created", ...Array(4).fill("order.completed")],
      );
      assert.equal(deliveredRows[0]![0], cursor[1]);
      assert.equal(new Set(deliveredRows.map((r) => r[0])).size, 6);
      assert.match(
        out,
        new RegExp(
          `^Feed caught up from the saved cursor ${cursor[1]}: 5 events \\(document\\.created, order\\.completed, order\\.completed, order\\.completed, order\\.completed\\), the same as delivered$`,
          "m",
        ),
      );
      assert.match(out, new RegExp(`^ {2}Webhook endpoint ${hook[1]} removed$`, "m"));
      // Final balances: the non-zero ones (AED and the BTC kept), and their total.
      assert.match(
        out,
        /^Final balances of demo-\S+:\n {2}ASSET +BALANCE +AVAILABLE +USD\n {2}AED +[\d.]+ +[\d.]+ +[\d.]+\n {2}BTC +0\.03 +0\.03 +[\d.]+\n {2}Total: [\d.]+ USD$/m,
      );
      const orders = /^Orders of demo-\S+:\n((?: {2}.*\n?)+)/m.exec(out);
      assert.ok(orders, out);
      const rows = orders[1]!.trimEnd().split("\n").slice(1);
      assert.deepEqual(
        rows.map((row) => row.trim().split(/ +/).slice(1, 3).join(" ")),
        ["deposit completed", "buy completed", "sell completed", "withdrawal completed"],
      );
      return onboarded[1];
    });
    assert.notEqual(clients[0], clients[1], "each run onboards its own client");
  });

  await t.test("says so when the price is stale (4001)", async () => {
    // The operator pins BTC-AED to prices taken an hour ago: older than PRICE_STALE_AFTER_S (60).
    const at = new Date(Date.now() - 3_600_000).toISOString();
    const pinned = await runCli(
      [
        "price",
        "set",
        "BTC-AED",
        "--reason",
        "stale on purpose",
        "--buy",
        "349250",
        "--sell",
        "348550",
        "--at",
        at,
      ],
      live.env,
    );
    assertOk(pinned);
    const r = await runDemo(live.env);
    assertExit(r, 1, live.log());
    assert.match(r.stdout, /^3\. Deposited 50000\.00 AED/m, `stderr: ${r.stderr}`);
    const lines = r.stderr.split("\n").filter((l) => l !== "");
    assert.equal(lines.length, 1, r.stderr);
    assert.match(lines[0]!, /^demo: the buy quote failed with 4001 \(.*\): the BTC-AED price is stale/);
    // The failed run removed its webhook endpoint too: none of the runs so far left one behind.
    assert.match(r.stdout, /^ {2}Webhook endpoint [0-9a-f-]{36} removed$/m);
    assert.deepEqual(await endpointsLeft(live.env), []);
  });

  await t.test("price resume prices the stale pair at once: the demo right after it succeeds", async () => {
    // The pair is still pinned an hour in the past (the step above); resume must not leave it stale
    // until the feed's next tick.
    const resumed = await runCli(["price", "resume", "BTC-AED", "--json"], live.env);
    assertOk(resumed);
    const pair = JSON.parse(resumed.stdout) as { price_pinned: boolean; price_at: string };
    assert.equal(pair.price_pinned, false);
    assert.ok(Date.now() - Date.parse(pair.price_at) < 60_000, pair.price_at);
    const r = await runDemo(live.env);
    assertExit(r, 0, live.log());
  });

  await t.test("without a running sandbox: one line saying to run npm start first", async (st) => {
    const empty = fs.mkdtempSync(path.join(os.tmpdir(), "counterpart-demo-empty-"));
    st.after(() => fs.rmSync(empty, { recursive: true, force: true }));
    // A data folder a stopped sandbox left behind: its files are there, nothing listens.
    const stopped = path.join(empty, "stopped");
    fs.mkdirSync(path.join(stopped, "demo-partner"), { recursive: true });
    const port = await closedPort();
    fs.writeFileSync(
      path.join(stopped, "endpoints.json"),
      JSON.stringify({ partner_url: `http://127.0.0.1:${port}`, admin_url: null }),
    );
    fs.writeFileSync(
      path.join(stopped, "demo-partner", "partner.json"),
      JSON.stringify({ partner_id: live.demo.partner_id }),
    );
    fs.writeFileSync(path.join(stopped, "demo-partner", "private-key.pem"), generateKeyPair().privateKeyPem);

    const [none, left] = await Promise.all([
      runDemo(baseEnv(path.join(empty, "no-such-folder"))),
      runDemo(baseEnv(stopped)),
    ]);
    for (const r of [none, left]) {
      assertOneLineFailure(r, /^demo: the Counterpart sandbox is not running .*; run `npm start` first/);
    }
  });
});
