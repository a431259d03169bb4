// Attack suite: slow clients. Headers sent a byte at a time (slowloris) and a body trickled a byte
// at a time are cut off well under 30 s, and meanwhile another partner is served promptly. Each
// slow connection gives up on its own after a bounded time, so the test stays bounded when the
// service does not cut it off.

import assert from "node:assert/strict";
import net from "node:net";
import { after, before, describe, test } from "node:test";
import { assertAlive, startTarget, type Target } from "./target.ts";

const timeout = 120_000;
/** A slow connection must be cut off before this; the contract's window is 60 s, well above. */
const cutOffWithinMs = 20_000;
/** How long a slow client keeps trickling before the test gives up on the service. */
const trickleForMs = 25_000;

interface SlowOutcome {
  /** When the service closed the connection or answered, from the first byte; null: it never did. */
  cutAfterMs: number | null;
  received: string;
}

/** Sends `head` at once, then one byte of `drip` every `everyMs`, until the service cuts it off. */
function trickle(
  address: { host: string; port: number },
  head: string,
  drip: string,
  everyMs: number,
): Promise<SlowOutcome> {
  return new Promise((resolve) => {
    const started = performance.now();
    const socket = net.connect(address.port, address.host);
    let received = "";
    let at = 0;
    let done = false;
    const finish = (cut: boolean) => {
      if (done) return;
      done = true;
      clearInterval(timer);
      clearTimeout(limit);
      socket.destroy();
      resolve({ cutAfterMs: cut ? performance.now() - started : null, received });
    };
    const timer = setInterval(() => {
      if (socket.destroyed || !socket.writable) return finish(true);
      socket.write(drip[at % drip.length]!);
      at++;
    }, everyMs);
    const limit = setTimeout(() => finish(false), trickleForMs);
    socket.on("data", (c: Buffer) => {
      received += c.toString("latin1");
      finish(true);
    });
    socket.on("end", () => finish(true));
    socket.on("close", () => finish(true));
    socket.on("error", () => finish(true));
    socket.write(head);
  });
}

describe("attack: slow clients", { timeout }, () => {
  let t: Target;
  let client: string;

  before(async () => {
    t = await startTarget();
    client = (await t.createClient(t.a, 1)).partnerClientId;
  });
  after(async () => {
    if (t !== undefined) {
      assertAlive(t);
      await t.close();
    }
  });

  test("slowloris headers and a trickled body are cut off well under 30 s; another partner is served meanwhile", async () => {
    const address = t.address();
    // A signed deposit whose body arrives a byte every 500 ms.
    const body = JSON.stringify({
      partner_client_id: client,
      asset_id: "AED",
      amount: "1",
      partner_order_ref: "slow-1",
    });
    const signed = t.sign({ method: "POST", target: "/v1/partner/deposits", body });
    const text = signed.bytes.toString("latin1");
    const head = text.slice(0, text.indexOf("\r\n\r\n") + 4);
    const slow: Promise<SlowOutcome>[] = [
      // Headers that never end: one more header byte every 500 ms.
      ...Array.from({ length: 10 }, () =>
        trickle(address, "GET /v1/partner/asset-pairs HTTP/1.1\r\nHost: x\r\nX-Slow: ", "a", 500),
      ),
      // A body announced in full, sent a byte every 500 ms.
      ...Array.from({ length: 5 }, () => trickle(address, head, body, 500)),
      // A chunked body whose chunks never end.
      trickle(
        address,
        "POST /v1/partner/deposits HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n1\r\n{\r\n",
        "1\r\n \r\n",
        500,
      ),
    ];

    // Meanwhile partner B is served promptly, again and again.
    const served: number[] = [];
    const deadline = performance.now() + 8_000;
    while (performance.now() < deadline) {
      const res = await t.call({ partner: t.b, method: "GET", target: "/v1/partner/asset-pairs" });
      assert.equal(res.status, 200, res.text);
      served.push(res.elapsedMs);
      await new Promise((r) => setTimeout(r, 250));
    }
    assert.ok(Math.max(...served) < 2_000, `B waited ${Math.max(...served).toFixed(0)} ms`);

    const outcomes = await Promise.all(slow);
    const late = outcomes
      .map((o, i) => ({ i, ...o }))
      .filter((o) => o.cutAfterMs === null || o.cutAfterMs > cutOffWithinMs);
    assert.deepEqual(
      late.map(
        (o) =>
          `connection ${o.i}: ${o.cutAfterMs === null ? "never cut off" : `cut after ${o.cutAfterMs.toFixed(0)} ms`}`,
      ),
      [],
      `slow connections outlived ${cutOffWithinMs} ms`,
    );
    // What a cut-off connection got, if anything, is a status line and our JSON, never library text.
    for (const o of outcomes) {
      if (o.received === "") continue;
      assert.match(o.received, /^HTTP\/1\.1 (400|408|413) /, o.received);
      assert.doesNotMatch(o.received, /Error:|node_modules|FST_/, o.received);
    }
    // The trickled deposit was never taken.
    const orders = await t.call({ method: "GET", target: "/v1/partner/orders" });
    assert.equal((orders.json as { total: number }).total, 0, orders.text);
  });
});
