// docs/decisions.md "Hardening": bytes that cannot be parsed behind a request received in full are
// answered (400, 431) only after that request's response, which is never lost to them.

import assert from "node:assert/strict";
import type { AddressInfo } from "node:net";
import net from "node:net";
import { after, before, describe, test } from "node:test";
import { signRequest } from "@counterpart/protocol";
import { clientBalances } from "../modules/ledger/index.ts";
import { insertClient, partnerRowCount } from "../testing/fixtures.ts";
import { startTestContext, type TestContext } from "../testing/harness.ts";
import { parseResponse, type RawResponse } from "../testing/raw-http.ts";

/** Writes `bytes` in one write and collects every response the server sends until it closes. */
function exchange(port: number, bytes: Buffer, timeoutMs = 10_000): Promise<RawResponse[]> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, "127.0.0.1", () => socket.write(bytes));
    const chunks: Buffer[] = [];
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`the server did not close within ${timeoutMs} ms`));
    }, timeoutMs);
    socket.on("data", (d) => chunks.push(d));
    socket.on("error", () => {});
    socket.on("close", () => {
      clearTimeout(timer);
      const responses: RawResponse[] = [];
      let rest = Buffer.concat(chunks);
      for (;;) {
        const r = parseResponse(rest);
        if (r === null) break;
        responses.push(r);
        const headEnd = rest.indexOf("\r\n\r\n") + 4;
        rest = rest.subarray(headEnd + Buffer.byteLength(r.body));
      }
      resolve(responses);
    });
  });
}

describe("malformed bytes behind a request received in full", () => {
  let ctx: TestContext;
  let port: number;
  let clientId: number;
  before(async () => {
    ctx = await startTestContext();
    await ctx.app.listen({ port: 0, host: "127.0.0.1" });
    port = (ctx.app.server.address() as AddressInfo).port;
    clientId = (await insertClient(ctx.services.database.db, ctx.partner.id, 1)).id;
  });
  after(async () => {
    await ctx.close();
  });

  function signedDeposit(ref: string, amount: string): Buffer {
    ctx.clock.advance(1);
    const body = JSON.stringify({
      partner_client_id: "client-1",
      asset_id: "AED",
      amount,
      partner_order_ref: ref,
    });
    const h = signRequest({
      partnerId: ctx.partner.id,
      privateKey: ctx.partner.privateKeyPem,
      method: "POST",
      target: "/v1/partner/deposits",
      body,
      nowMs: ctx.clock.nowMs(),
    });
    return Buffer.from(
      "POST /v1/partner/deposits HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n" +
        `Content-Length: ${Buffer.byteLength(body)}\r\n` +
        Object.entries(h)
          .map(([k, v]) => `${k}: ${v}\r\n`)
          .join("") +
        `\r\n${body}`,
    );
  }

  const aed = async () =>
    (await clientBalances(ctx.services.database.db, clientId)).get("AED")?.balance ?? 0n;
  const orders = () => partnerRowCount(ctx.services.database.db, "orders", ctx.partner.id);

  for (const [name, trailer, status] of [
    ["garbage", "GARBAGE\r\n\r\n", 400],
    ["a negative Content-Length", "POST /x HTTP/1.1\r\nHost: a\r\nContent-Length: -5\r\n\r\n", 400],
    ["headers over the limit", `GET /x HTTP/1.1\r\nHost: a\r\nX-Big: ${"a".repeat(20_000)}\r\n\r\n`, 431],
  ] as const) {
    test(`a deposit followed by ${name} in the same write: its 200 first, then the ${status}`, async () => {
      const [balance, count] = [await aed(), await orders()];
      const ref = `pipelined-${status}-${name.length}`;
      const responses = await exchange(port, Buffer.concat([signedDeposit(ref, "7"), Buffer.from(trailer)]));
      assert.deepEqual(
        responses.map((r) => r.status),
        [200, status],
      );
      const order = JSON.parse(responses[0]!.body).result;
      assert.equal(order.partner_order_ref, ref);
      assert.equal(order.status, "completed");
      assert.equal(JSON.parse(responses[1]!.body).code, status);
      assert.equal(await aed(), balance + 700_000_000n);
      assert.equal(await orders(), count + 1);
    });
  }

  test("two public reads pipelined, then garbage: two 200s in order, then the 400", async () => {
    const get = (target: string) => `GET ${target} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n`;
    const responses = await exchange(
      port,
      Buffer.from(get("/v1/public/countries/ae") + get("/healthz") + "GARBAGE\r\n\r\n"),
    );
    assert.deepEqual(
      responses.map((r) => r.status),
      [200, 200, 400],
    );
    assert.equal(JSON.parse(responses[0]!.body).result.id, "ae");
  });

  test("malformed bytes inside a request's own body: the 400 at once, and nothing applied", async () => {
    const [balance, count] = [await aed(), await orders()];
    const deposit = signedDeposit("chunked-broken", "5").toString("latin1");
    const head = deposit.slice(0, deposit.indexOf("\r\n\r\n")).replace(/Content-Length: \d+\r\n/, "");
    const responses = await exchange(
      port,
      Buffer.from(`${head}\r\nTransfer-Encoding: chunked\r\n\r\n5\r\n{"par\r\nZZZ\r\n`, "latin1"),
    );
    assert.deepEqual(
      responses.map((r) => r.status),
      [400],
    );
    assert.equal(await aed(), balance);
    assert.equal(await orders(), count);
  });
});

describe("requests Node parses that the service cannot read, and methods its router did not know", () => {
  let ctx: TestContext;
  let port: number;
  before(async () => {
    ctx = await startTestContext();
    await ctx.app.listen({ port: 0, host: "127.0.0.1" });
    port = (ctx.app.server.address() as AddressInfo).port;
  });
  after(async () => {
    await ctx.close();
  });

  const send = async (text: string) => {
    const responses = await exchange(port, Buffer.from(text, "latin1"));
    assert.equal(responses.length, 1, text);
    return responses[0]!;
  };
  const badRequest = { code: 400, msg: "Bad Request", msg_detail: null };

  for (const [name, text] of [
    ["an asterisk target", "GET * HTTP/1.1\r\nHost: a\r\n\r\n"],
    ["OPTIONS *", "OPTIONS * HTTP/1.1\r\nHost: a\r\n\r\n"],
    ["an authority target", "GET 127.0.0.1:80 HTTP/1.1\r\nHost: a\r\n\r\n"],
    ["a CONNECT", "CONNECT 127.0.0.1:80 HTTP/1.1\r\nHost: 127.0.0.1:80\r\n\r\n"],
    ["HTTP/1.1 without Host", "GET /v1/public/countries/ae HTTP/1.1\r\n\r\n"],
    ["two Host fields", "GET /v1/public/countries/ae HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n"],
    // RFC 10008 §2: a QUERY without Content-Type must fail (it was a 500), on any path.
    ["a QUERY without Content-Type", "QUERY /v1/public/assets HTTP/1.1\r\nHost: a\r\n\r\n"],
    [
      "a QUERY without Content-Type, signed space",
      "QUERY /v1/partner/asset-pairs HTTP/1.1\r\nHost: a\r\n\r\n",
    ],
  ] as const) {
    test(`${name}: 400 in the contract's shape, then the socket closes`, async () => {
      const res = await send(text);
      assert.equal(res.status, 400);
      assert.deepEqual(JSON.parse(res.body), badRequest);
      assert.equal(res.headers["content-type"], "application/json; charset=utf-8");
    });
  }

  test("an absolute-form target is routed by its path (RFC 9112 §3.2.2); HTTP/1.0 needs no Host", async () => {
    const absolute = await send(
      "GET http://127.0.0.1/v1/public/countries/ae HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n",
    );
    assert.equal(absolute.status, 200);
    assert.equal(JSON.parse(absolute.body).result.id, "ae");
    const old = await send("GET /v1/public/countries/ae HTTP/1.0\r\n\r\n");
    assert.equal(old.status, 200);
  });

  test("an expectation other than 100-continue is ignored: the request is served", async () => {
    const res = await send(
      "GET /v1/public/countries/ae HTTP/1.1\r\nHost: a\r\nExpect: foo\r\nConnection: close\r\n\r\n",
    );
    assert.equal(res.status, 200);
    assert.equal(JSON.parse(res.body).result.id, "ae");
  });

  test("a known path asked with any method it does not serve is a 405, also one the router did not know", async () => {
    for (const method of ["TRACE", "PROPFIND", "SEARCH", "LINK", "M-SEARCH", "PURGE", "DELETE"]) {
      const res = await send(
        `${method} /v1/public/countries/ae HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n`,
      );
      assert.equal(res.status, 405, method);
      assert.equal(JSON.parse(res.body).code, 405, method);
      assert.equal(res.headers.allow, "GET, HEAD", method);
      const unknown = await send(
        `${method} /v1/public/nothing HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n`,
      );
      assert.equal(unknown.status, 404, method);
    }
    // In the signed space authentication comes first, whatever the method.
    const unsigned = await send(
      "PROPFIND /v1/partner/asset-pairs HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n",
    );
    assert.equal(unsigned.status, 401);
  });
});
