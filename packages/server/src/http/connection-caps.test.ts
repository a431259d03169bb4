// Caps on open connections (docs/decisions.md, "Hardening"): past the cap of one client address,
// or of the listener, a new connection is closed at once, unread, so a request sent on it does
// nothing; other addresses are served meanwhile, and a closed connection frees its place. Real
// sockets on 127.0.0.x, with caps far smaller than the real ones.

import assert from "node:assert/strict";
import http from "node:http";
import type { AddressInfo } from "node:net";
import net from "node:net";
import { after, before, describe, test } from "node:test";
import { signRequest } from "@counterpart/protocol";
import type { FastifyInstance } from "fastify";
import { buildPartnerApp } from "../app.ts";
import { insertClient } from "../testing/fixtures.ts";
import { startTestContext, type TestContext } from "../testing/harness.ts";
import { moneyState } from "../testing/money-state.ts";
import { parseResponse } from "../testing/raw-http.ts";
import { capConnections } from "./connection-caps.ts";
import { HttpMetrics } from "./metrics.ts";

interface Conn {
  socket: net.Socket;
  connected: Promise<void>;
  closed: Promise<void>;
  received(): Buffer;
  isClosed(): boolean;
}

/** A connection from `from` (a 127.0.0.x address), optionally sending `bytes` once connected. */
function connect(port: number, from: string, bytes?: string): Conn {
  const chunks: Buffer[] = [];
  let closedFlag = false;
  const socket = net.connect({ port, host: "127.0.0.1", localAddress: from });
  socket.on("error", () => {});
  socket.on("data", (d) => chunks.push(d));
  const connected = new Promise<void>((resolve) =>
    socket.once("connect", () => {
      if (bytes !== undefined) socket.write(bytes);
      resolve();
    }),
  );
  const closed = new Promise<void>((resolve) =>
    socket.once("close", () => {
      closedFlag = true;
      resolve();
    }),
  );
  return { socket, connected, closed, received: () => Buffer.concat(chunks), isClosed: () => closedFlag };
}

async function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      promise,
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`${what}: not within ${ms} ms`)), ms);
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}

/** A GET /healthz from `from` on a connection of its own: the status, or null when it was closed unanswered. */
async function health(port: number, from: string): Promise<number | null> {
  const c = connect(port, from, "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n");
  await within(c.closed, 5_000, `GET /healthz from ${from}`);
  return parseResponse(c.received())?.status ?? null;
}

/** Lets the server see what the client did (a connection made or closed). */
async function settle(): Promise<void> {
  await new Promise((resolve) => setTimeout(resolve, 100));
}

/** Waits until the server holds no connection (each close counted), for at most 5 s. */
async function drained(server: http.Server | net.Server): Promise<void> {
  for (let i = 0; i < 100; i++) {
    const n = await new Promise<number>((resolve) => server.getConnections((_err, count) => resolve(count)));
    if (n === 0) return;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error("the server still holds connections after 5 s");
}

describe("connection caps", () => {
  let ctx: TestContext;
  let app: FastifyInstance;
  let port: number;
  const open: Conn[] = [];
  const metrics = new HttpMetrics({ defaultMetrics: false });
  /** The value of a series of the process's metrics, as /metrics would give it. */
  const metric = async (name: string, labels: Record<string, string> = {}) => {
    const values = (await metrics.registry.getSingleMetric(name)?.get())?.values ?? [];
    return values.find((v) => Object.entries(labels).every(([k, l]) => v.labels[k] === l))?.value;
  };
  before(async () => {
    ctx = await startTestContext();
    await insertClient(ctx.services.database.db, ctx.partner.id, 1);
    app = buildPartnerApp(ctx.services, {
      logger: false,
      metrics,
      connectionCaps: { perAddressMax: 4, totalMax: 7 },
    });
    await app.listen({ port: 0, host: "127.0.0.1" });
    port = (app.server.address() as AddressInfo).port;
  });
  after(async () => {
    for (const c of open) c.socket.destroy();
    await app.close();
    await ctx.close();
  });

  function signedDeposit(ref: string): string {
    const body = JSON.stringify({
      partner_client_id: "client-1",
      asset_id: "AED",
      amount: "25",
      partner_order_ref: ref,
    });
    const target = "/v1/partner/deposits";
    const sig = signRequest({
      partnerId: ctx.partner.id,
      privateKey: ctx.partner.privateKeyPem,
      method: "POST",
      target,
      body,
      nowMs: ctx.clock.nowMs(),
    });
    const headers = Object.entries(sig)
      .map(([k, v]) => `${k}: ${v}`)
      .join("\r\n");
    return (
      `POST ${target} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n` +
      `Content-Length: ${Buffer.byteLength(body)}\r\n${headers}\r\nConnection: close\r\n\r\n${body}`
    );
  }

  test("past one address's cap a connection is closed unread; other addresses are served; a close frees a place", async () => {
    const held = Array.from({ length: 4 }, () => connect(port, "127.0.0.1"));
    open.push(...held);
    await Promise.all(held.map((c) => c.connected));
    await settle();

    const before = await moneyState(ctx.services.database.db);
    const refused = connect(port, "127.0.0.1", signedDeposit("cap-refused"));
    open.push(refused);
    await within(refused.closed, 5_000, "the connection past the cap is closed");
    assert.equal(refused.received().length, 0, "closed without a byte of answer");
    assert.deepEqual(
      await moneyState(ctx.services.database.db),
      before,
      "the deposit sent on it did nothing",
    );
    // An operator sees it: the refusal counted by the cap it met, the connections open.
    assert.equal(await metric("counterpart_connections_refused_total", { cap: "address" }), 1);
    assert.equal(await metric("counterpart_connections_refused_total", { cap: "listener" }), 0);
    assert.equal(await metric("counterpart_connections_open"), 4);

    assert.equal(await health(port, "127.0.0.2"), 200, "another address is served meanwhile");
    assert.ok(
      held.every((c) => !c.isClosed()),
      "the connections within the cap stay open",
    );

    held[0]!.socket.destroy();
    await settle();
    // The same deposit, on a connection within the cap, is done: the refused one was not.
    const accepted = connect(port, "127.0.0.1", signedDeposit("cap-accepted"));
    open.push(accepted);
    await within(accepted.closed, 5_000, "the deposit within the cap is answered");
    const res = parseResponse(accepted.received());
    assert.equal(res?.status, 200, res?.body);
    assert.equal(JSON.parse(res?.body ?? "{}").result?.partner_order_ref, "cap-accepted");
    assert.notDeepEqual(await moneyState(ctx.services.database.db), before);
    for (const c of held) c.socket.destroy();
    await drained(app.server);
  });

  test("past the listener's cap every address is refused, until a connection closes", async () => {
    await drained(app.server);
    const held = [
      "127.0.0.3",
      "127.0.0.3",
      "127.0.0.4",
      "127.0.0.4",
      "127.0.0.5",
      "127.0.0.5",
      "127.0.0.6",
    ].map((from) => connect(port, from));
    open.push(...held);
    await Promise.all(held.map((c) => c.connected));
    await settle();
    assert.equal(await health(port, "127.0.0.7"), null, "a new address is refused at the listener's cap");
    assert.equal(await metric("counterpart_connections_refused_total", { cap: "listener" }), 1);
    assert.equal(
      await metric("counterpart_connections_refused_total", { cap: "address" }),
      1,
      "the first test's",
    );
    assert.equal(await metric("counterpart_connections_open"), 7);
    held[0]!.socket.destroy();
    await settle();
    assert.equal(await health(port, "127.0.0.7"), 200);
    assert.ok(held.slice(1).every((c) => !c.isClosed()));
    for (const c of held) c.socket.destroy();
    await settle();
  });
});

test("the proxies of TRUST_PROXY are exempt from the per-address cap, not from the listener's", async () => {
  const server = http.createServer((_req, res) => res.end("ok"));
  const counts = capConnections(server, { perAddressMax: 2, totalMax: 8 }, ["127.0.0.8/32"]);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as AddressInfo).port;
  const held: Conn[] = [];
  const hold = async (from: string) => {
    const c = connect(port, from);
    held.push(c);
    await c.connected;
    await settle();
    return c;
  };
  try {
    for (let i = 0; i < 5; i++) await hold("127.0.0.8");
    assert.equal(counts.open(), 5, "five connections from the proxy, past the per-address cap of 2");
    await hold("127.0.0.9");
    await hold("127.0.0.9");
    const third = await hold("127.0.0.9");
    await within(third.closed, 5_000, "another address keeps its cap of 2");
    assert.equal(counts.refused(), 1);
    await hold("127.0.0.8");
    assert.equal(counts.open(), 8);
    const late = await hold("127.0.0.8");
    await within(late.closed, 5_000, "the proxy is refused at the listener's cap");
    assert.equal(counts.refused(), 2);
    assert.equal(counts.open(), 8);
    assert.ok(held.filter((c) => c !== third && c !== late).every((c) => !c.isClosed()));
  } finally {
    for (const c of held) c.socket.destroy();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
});
