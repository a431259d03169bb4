// docs/decisions.md "Hardening": a body too large is a 413 that the client receives. Answering and
// closing while the client still writes would reset the connection, and the reset can destroy the
// 413 before the client reads it; the rest of the body is read and dropped first, within bounds.

import assert from "node:assert/strict";
import net, { type AddressInfo } from "node:net";
import { after, before, describe, test } from "node:test";
import { limits } from "../config/limits.ts";
import { startTestContext, type TestContext } from "../testing/harness.ts";
import { parseResponse, type RawResponse } from "../testing/raw-http.ts";

const tooLargeBody = '{"code":413,"msg":"Payload Too Large","msg_detail":null}';

interface Upload {
  target: string;
  contentType: string;
  /** Bytes of body the client writes. */
  bytes: number;
  /** Content-Length to announce; null: chunked. */
  contentLength: number | null;
}

/**
 * Writes the whole request at once, in 64 KiB pieces, without waiting for an answer, and resolves
 * with what came back once the server closed (null: no response, as after a reset) and the time
 * from the first byte sent to the response's first byte.
 */
function upload(
  port: number,
  u: Upload,
): Promise<{ response: RawResponse | null; firstByteMs: number | null }> {
  return new Promise((resolve) => {
    const socket = net.connect(port, "127.0.0.1");
    const chunks: Buffer[] = [];
    let started = 0;
    let firstByteMs: number | null = null;
    const timer = setTimeout(() => socket.destroy(), 20_000);
    socket.on("data", (d: Buffer) => {
      firstByteMs ??= Date.now() - started;
      chunks.push(d);
    });
    socket.on("error", () => {});
    socket.on("close", () => {
      clearTimeout(timer);
      resolve({ response: parseResponse(Buffer.concat(chunks)), firstByteMs });
    });
    socket.on("connect", () => {
      started = Date.now();
      const framing =
        u.contentLength === null ? "Transfer-Encoding: chunked" : `Content-Length: ${u.contentLength}`;
      socket.write(
        `POST ${u.target} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n` +
          `Content-Type: ${u.contentType}\r\n${framing}\r\n\r\n`,
      );
      const piece = Buffer.alloc(64 * 1024, 0x20);
      for (let sent = 0; sent < u.bytes; sent += piece.length) {
        const part = piece.subarray(0, Math.min(piece.length, u.bytes - sent));
        if (u.contentLength === null) socket.write(`${part.length.toString(16)}\r\n`);
        socket.write(part);
        if (u.contentLength === null) socket.write("\r\n");
      }
      if (u.contentLength === null) socket.write("0\r\n\r\n");
    });
  });
}

describe("bodies too large", () => {
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

  const json = {
    target: "/v1/partner/deposits",
    contentType: "application/json",
    limit: limits.jsonBodyBytesMax,
  };
  const multipart = {
    target: "/v1/partner/clients/c-1/documents",
    contentType: "multipart/form-data; boundary=x",
    limit: limits.multipartBodyBytesMax,
  };

  test("sent whole, 4 MiB past the limit, announced or chunked: the client reads the 413 every time", async () => {
    for (const route of [json, multipart]) {
      const bytes = route.limit + 4 * 1024 * 1024;
      for (const contentLength of [bytes, null]) {
        for (let round = 0; round < 5; round++) {
          const why = `${route.contentType} ${contentLength === null ? "chunked" : "announced"} #${round}`;
          const { response } = await upload(port, { ...route, bytes, contentLength });
          assert.ok(response !== null, `${why}: the connection closed without the 413`);
          assert.equal(response.status, 413, why);
          assert.equal(response.body, tooLargeBody, why);
        }
      }
    }
    const res = await ctx.signed({ method: "GET", url: "/v1/partner/asset-pairs" });
    assert.equal(res.statusCode, 200, "the app still serves");
  });

  test("the reading is bounded: a length past the linger bound is a 413 at once, a stalled body one after the linger time", async () => {
    // Announced far past what lingering would read, nothing of it sent: answered without waiting.
    const hopeless = await upload(port, {
      ...json,
      bytes: 0,
      contentLength: json.limit + limits.bodyLingerBytesMax + 1,
    });
    assert.equal(hopeless.response?.status, 413);
    assert.equal(hopeless.response?.body, tooLargeBody);

    // Announced one byte over, then only a part sent: the 413 comes once the linger time is up,
    // well before the server's bound on receiving a request.
    const stalled = await upload(port, { ...json, bytes: 1024, contentLength: json.limit + 1 });
    assert.equal(stalled.response?.status, 413);
    assert.equal(stalled.response?.body, tooLargeBody);
    assert.ok(stalled.firstByteMs !== null, "an answer came");
    assert.ok(stalled.firstByteMs >= limits.bodyLingerMs - 50, `${stalled.firstByteMs} ms`);
    assert.ok(stalled.firstByteMs < limits.requestReceiveTimeoutMs, `${stalled.firstByteMs} ms`);
    // The hopeless one did not wait for the linger time (compared, not timed: the machine may be slow).
    assert.ok(
      hopeless.firstByteMs !== null && hopeless.firstByteMs < stalled.firstByteMs,
      `${hopeless.firstByteMs} ms, then ${stalled.firstByteMs} ms`,
    );
  });
});
