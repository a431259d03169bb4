// Bounds on receiving a request (docs/decisions.md, "Hardening"): a silent client, headers or a
// body trickled in are answered 408 in the contract's shape and their sockets closed, while other
// clients are served. Real sockets on 127.0.0.1, with bounds far shorter than the real ones.

import assert from "node:assert/strict";
import type { AddressInfo } from "node:net";
import { after, before, describe, test } from "node:test";
import { signRequest } from "@counterpart/protocol";
import type { FastifyInstance } from "fastify";
import { buildAdminApp, buildPartnerApp } from "../app.ts";
import { limits } from "../config/limits.ts";
import { startTestContext, type TestContext } from "../testing/harness.ts";
import { moneyState } from "../testing/money-state.ts";
import { type HeldSocket, holdSocket, parseResponse, rawRequest, trickle } from "../testing/raw-http.ts";

const timeouts = {
  requestHeadersTimeoutMs: 600,
  requestReceiveTimeoutMs: 1_200,
  requestTimeoutCheckIntervalMs: 100,
  keepAliveIdleMs: 1_500,
};
const timeoutBody = '{"code":408,"msg":"Request Timeout","msg_detail":null}';
/** Long enough for any bound above plus a busy machine; a socket still open after it fails. */
const patienceMs = 8_000;

async function closedWithin(held: HeldSocket, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<boolean>((resolve) => {
    timer = setTimeout(() => resolve(false), ms);
  });
  try {
    return await Promise.race([held.closed.then(() => true), late]);
  } finally {
    clearTimeout(timer);
  }
}

function assertTimedOut(held: HeldSocket, why: string): void {
  const res = parseResponse(held.received());
  assert.ok(
    res !== null,
    `${why}: a response before the close, got ${JSON.stringify(held.received().toString("latin1"))}`,
  );
  assert.equal(res.status, 408, why);
  assert.equal(res.headers["content-type"], "application/json; charset=utf-8", why);
  assert.equal(res.body, timeoutBody, why);
}

describe("request receive bounds", () => {
  let ctx: TestContext;
  let app: FastifyInstance;
  let port: number;
  const held: HeldSocket[] = [];
  before(async () => {
    ctx = await startTestContext();
    app = buildPartnerApp(ctx.services, { logger: false, timeouts });
    await app.listen({ port: 0, host: "127.0.0.1" });
    port = (app.server.address() as AddressInfo).port;
  });
  after(async () => {
    for (const h of held) h.socket.destroy();
    await app.close();
    await ctx.close();
  });

  test("the real bounds: headers within 10 s, the whole request within 15 s, checked every second", () => {
    const real = buildPartnerApp(ctx.services, { logger: false });
    const admin = buildAdminApp(ctx.services, {
      logger: false,
      adminToken: "an-admin-token-for-this-test",
      metricsText: async () => ({ contentType: "text/plain", body: "" }),
    });
    for (const server of [real.server, admin.server]) {
      assert.equal(server.headersTimeout, limits.requestHeadersTimeoutMs);
      assert.equal(server.requestTimeout, limits.requestReceiveTimeoutMs);
      assert.equal(server.keepAliveTimeout, limits.keepAliveIdleMs);
    }
    // The worst case is the bound plus one check interval: well under 30 s.
    assert.ok(limits.requestHeadersTimeoutMs + limits.requestTimeoutCheckIntervalMs <= 15_000);
    assert.ok(limits.requestReceiveTimeoutMs + limits.requestTimeoutCheckIntervalMs <= 20_000);
  });

  test("a body trickled in, unsigned, on POST /v1/partner/deposits: 408 and the socket closed; nothing written", async () => {
    const before_ = await moneyState(ctx.services.database.db);
    const body = Buffer.from('{"partner_client_id":"client-1","asset_id":"AED","amount":"1"}');
    let stop = () => {};
    const slow = holdSocket(port, (socket) => {
      socket.write(
        `POST /v1/partner/deposits HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n`,
      );
      stop = trickle(socket, body, 100);
    });
    held.push(slow);
    try {
      assert.ok(await closedWithin(slow, patienceMs), "the slow body's socket is closed");
    } finally {
      stop();
    }
    assertTimedOut(slow, "slow body");
    assert.deepEqual(await moneyState(ctx.services.database.db), before_);
  });

  test("a client that connects and sends nothing, or trickles its headers: 408 and closed", async () => {
    const silent = holdSocket(port);
    let stop = () => {};
    const slowHeaders = holdSocket(port, (socket) => {
      socket.write("GET /v1/partner/asset-pairs HTTP/1.1\r\nHost: 127.0.0.1\r\n");
      stop = trickle(socket, Buffer.from("X-Padding: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\r\n"), 50);
    });
    held.push(silent, slowHeaders);
    try {
      assert.ok(await closedWithin(silent, patienceMs), "the silent socket is closed");
      assert.ok(await closedWithin(slowHeaders, patienceMs), "the slow headers' socket is closed");
    } finally {
      stop();
    }
    assertTimedOut(silent, "silent");
    assertTimedOut(slowHeaders, "slow headers");
  });

  test("an idle keep-alive connection is closed after its bound", async () => {
    const idle = holdSocket(port, (socket) =>
      socket.write("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"),
    );
    held.push(idle);
    assert.ok(await closedWithin(idle, patienceMs), "the idle socket is closed");
    assert.equal(parseResponse(idle.received())?.status, 200);
  });

  test("while 40 slow clients hold sockets, a signed request from another client is answered", async () => {
    const stops: (() => void)[] = [];
    const slow: HeldSocket[] = [];
    for (let i = 0; i < 40; i++) {
      const h = holdSocket(port, (socket) => {
        socket.write(
          "POST /v1/partner/deposits HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n",
        );
        stops.push(trickle(socket, Buffer.alloc(1000, 0x20), 100));
      });
      slow.push(h);
      held.push(h);
    }
    try {
      // Every slow socket is open and sending before the signed request starts.
      await new Promise((resolve) => setTimeout(resolve, 150));
      const target = "/v1/partner/asset-pairs";
      const sig = signRequest({
        partnerId: ctx.partner.id,
        privateKey: ctx.partner.privateKeyPem,
        method: "GET",
        target,
        nowMs: ctx.clock.nowMs(),
      });
      const headers = Object.entries(sig)
        .map(([k, v]) => `${k}: ${v}`)
        .join("\r\n");
      const res = await rawRequest(port, `GET ${target} HTTP/1.1\r\nHost: 127.0.0.1\r\n${headers}`);
      const stillOpen = slow.filter((h) => h.closedAfterMs() === null).length;
      assert.equal(res.status, 200, res.body);
      assert.ok(Array.isArray(JSON.parse(res.body).items));
      assert.equal(stillOpen, slow.length, "answered while every slow client still held its socket");
      for (const h of slow)
        assert.ok(await closedWithin(h, patienceMs), "each slow socket is closed in the end");
      for (const h of slow) assertTimedOut(h, "slow client");
    } finally {
      for (const stop of stops) stop();
    }
  });
});
