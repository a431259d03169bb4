// docs/decisions.md, "Request bodies held at once": a body is read whole before authentication can
// hash it, so the bytes a process holds at once are bounded (BODY_BYTES_IN_FLIGHT_MAX). Past the
// budget a body is a 503 with Retry-After, read and dropped like a body too large, and nothing of
// the request is done; every way a request ends gives its bytes back.

import assert from "node:assert/strict";
import net, { type AddressInfo } from "node:net";
import { after, before, describe, test } from "node:test";
import { signRequest } from "@counterpart/protocol";
import { limits } from "../config/limits.ts";
import { insertClient } from "../testing/fixtures.ts";
import { startTestContext, type TestContext } from "../testing/harness.ts";
import { parseResponse, type RawResponse } from "../testing/raw-http.ts";
import { BodyBudget } from "./body-parsing.ts";

const unavailableBody = '{"code":503,"msg":"Service Unavailable","msg_detail":null}';
/** Room for one upload of the largest size and half a MiB more. */
const budgetBytes = limits.multipartBodyBytesMax + 512 * 1024;
const uploadTarget = "/v1/partner/clients/client-1/documents";

interface Exchange {
  /** The response, once the server answered and closed; null if it closed without one. */
  readonly response: Promise<RawResponse | null>;
  /** Writes more of the body. */
  write(bytes: Buffer | string): void;
  /** Goes away without finishing the request. */
  destroy(): void;
}

/** Opens a connection and writes `head` (request line and headers, without the blank line). */
function open(port: number, head: string): Exchange {
  const socket = net.connect(port, "127.0.0.1");
  const chunks: Buffer[] = [];
  const timer = setTimeout(() => socket.destroy(), 30_000);
  socket.on("data", (d: Buffer) => chunks.push(d));
  socket.on("error", () => {});
  const response = new Promise<RawResponse | null>((resolve) => {
    socket.on("close", () => {
      clearTimeout(timer);
      resolve(parseResponse(Buffer.concat(chunks)));
    });
  });
  socket.write(`${head}\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n`);
  return { response, write: (b) => socket.write(b), destroy: () => socket.destroy() };
}

/** Waits, within 5 s, until the budget holds `bytes`. */
async function heldBecomes(budget: BodyBudget, bytes: number): Promise<void> {
  const until = Date.now() + 5_000;
  while (budget.held() !== bytes && Date.now() < until) await new Promise((r) => setTimeout(r, 10));
  assert.equal(budget.held(), bytes, "bytes held of the body budget");
}

test("the budget takes what fits and gives back what it took", () => {
  const budget = new BodyBudget(100);
  assert.equal(budget.take(60), true);
  assert.equal(budget.take(41), false, "past the budget: nothing taken");
  assert.equal(budget.held(), 60);
  assert.equal(budget.take(40), true, "exactly the budget fits");
  budget.give(100);
  assert.equal(budget.held(), 0);
  budget.give(5);
  assert.equal(budget.held(), 0, "never below nothing");
});

describe("request bodies held at once", () => {
  let ctx: TestContext;
  let port: number;
  let budget: BodyBudget;
  let ref = 0;
  before(async () => {
    ctx = await startTestContext({ env: { BODY_BYTES_IN_FLIGHT_MAX: String(budgetBytes) } });
    await insertClient(ctx.services.database.db, ctx.partner.id, 1);
    await ctx.app.listen({ port: 0, host: "127.0.0.1" });
    port = (ctx.app.server.address() as AddressInfo).port;
    budget = ctx.services.bodyBudget;
  });
  after(async () => {
    await ctx.close();
  });

  /** A signed deposit of 1 AED, its JSON (or `text`) padded with spaces to `bytes`. */
  function deposit(bytes: number, text?: string): { head: string; body: Buffer } {
    ref++;
    const json =
      text ??
      JSON.stringify({
        partner_client_id: "client-1",
        asset_id: "AED",
        amount: "1",
        partner_order_ref: `budget-${ref}`,
      });
    const body = Buffer.from(json.padEnd(bytes, " "));
    ctx.clock.advance(1);
    const sig = signRequest({
      partnerId: ctx.partner.id,
      privateKey: ctx.partner.privateKeyPem,
      method: "POST",
      target: "/v1/partner/deposits",
      body,
      nowMs: ctx.clock.nowMs(),
    });
    const headers = Object.entries(sig).map(([k, v]) => `${k}: ${v}`);
    return {
      head: [
        "POST /v1/partner/deposits HTTP/1.1",
        "Content-Type: application/json",
        `Content-Length: ${body.length}`,
        ...headers,
      ].join("\r\n"),
      body,
    };
  }

  async function send(d: { head: string; body: Buffer }): Promise<RawResponse | null> {
    const x = open(port, d.head);
    x.write(d.body);
    return x.response;
  }

  const jsonType = "application/json";
  const multipartType = "multipart/form-data; boundary=b";

  /** An unsigned POST announcing `length` bytes of body, of which it writes `bytes` (all by default). */
  function unsigned(target: string, contentType: string, length: number, bytes = length): Exchange {
    const x = open(
      port,
      `POST ${target} HTTP/1.1\r\nContent-Type: ${contentType}\r\nContent-Length: ${length}`,
    );
    x.write(Buffer.alloc(bytes, 0x20));
    return x;
  }

  const orders = async () =>
    Number(
      (
        await ctx.services.database.db
          .selectFrom("orders")
          .select((eb) => eb.fn.countAll().as("n"))
          .executeTakeFirstOrThrow()
      ).n,
    );

  /** Opens an upload announcing the largest body and sends 1 KiB of it: it holds the whole length. */
  async function holder(): Promise<Exchange> {
    const x = unsigned(uploadTarget, multipartType, limits.multipartBodyBytesMax, 1024);
    await heldBecomes(budget, limits.multipartBodyBytesMax);
    return x;
  }

  test("past the budget a body is a 503 with Retry-After, and nothing is done; room again once the holder goes", async () => {
    const before = await orders();
    const refusedBefore = budget.refused();
    const held = await holder();

    // Announced past what is left: refused, the rest of it read and dropped so the client reads the 503.
    const refused = await send(deposit(600 * 1024));
    assert.equal(refused?.status, 503);
    assert.equal(refused?.body, unavailableBody);
    assert.equal(refused?.headers["retry-after"], "1");
    // Chunked, the same once its chunks pass what is left.
    const chunked = open(
      port,
      `POST /v1/partner/deposits HTTP/1.1\r\nContent-Type: ${jsonType}\r\nTransfer-Encoding: chunked`,
    );
    for (let i = 0; i < 10; i++) chunked.write(`10000\r\n${" ".repeat(0x10000)}\r\n`);
    chunked.write("0\r\n\r\n");
    const chunkedAnswer = await chunked.response;
    assert.equal(chunkedAnswer?.status, 503);
    assert.equal(chunkedAnswer?.body, unavailableBody);
    assert.equal(await orders(), before, "nothing was ordered");
    assert.equal(budget.refused(), refusedBefore + 2, "each refusal counted (on /metrics)");
    assert.equal(budget.held(), limits.multipartBodyBytesMax, "the refused bodies hold nothing");

    // A body that fits what is left is served meanwhile.
    const small = await send(deposit(1024));
    assert.equal(small?.status, 200, small?.body);
    assert.equal(await orders(), before + 1);

    // The holder goes: its bytes come back, and the body refused before is served.
    held.destroy();
    assert.equal(await held.response, null);
    await heldBecomes(budget, 0);
    const served = await send(deposit(600 * 1024));
    assert.equal(served?.status, 200, served?.body);
    assert.equal(await orders(), before + 2);
    await heldBecomes(budget, 0);
  });

  test("every way a request ends gives its bytes back", async () => {
    const ends: [string, () => Promise<RawResponse | null>, number | null][] = [
      ["served", () => send(deposit(2048)), 200],
      [
        "a wrong signature",
        () => {
          const d = deposit(2048);
          // Its first character changed to another one.
          const head = d.head.replace(
            /(X-Signature: )(.)/i,
            (_, name: string, c: string) => name + (c === "A" ? "B" : "A"),
          );
          assert.notEqual(head, d.head);
          return send({ head, body: d.body });
        },
        401,
      ],
      ["not JSON", () => send(deposit(2048, "{")), 422],
      [
        "too large",
        () => unsigned("/v1/partner/deposits", jsonType, limits.jsonBodyBytesMax + 1).response,
        413,
      ],
      ["an upload of nothing valid", () => unsigned(uploadTarget, multipartType, 4096).response, 401],
      [
        "the client gone halfway",
        async () => {
          const x = unsigned(uploadTarget, multipartType, 1_000_000, 500_000);
          await heldBecomes(budget, 1_000_000);
          x.destroy();
          return x.response;
        },
        null,
      ],
      ["a path no route serves", () => unsigned("/v1/partner/nowhere", jsonType, 2048).response, 401],
      [
        "a target no route can decode (read where no hook ran)",
        () => unsigned("/v1/partner/clients/%E0%A4%A/documents", jsonType, 2048).response,
        401,
      ],
      [
        "refused by the budget",
        async () => {
          const held = await holder();
          const refused = await send(deposit(600 * 1024));
          held.destroy();
          await held.response;
          return refused;
        },
        503,
      ],
    ];
    for (const [why, run, status] of ends) {
      const response = await run();
      assert.equal(response?.status ?? null, status, `${why}: ${response?.body}`);
      await heldBecomes(budget, 0);
    }
    const res = await ctx.signed({ method: "GET", url: "/v1/partner/asset-pairs" });
    assert.equal(res.statusCode, 200, "the app still serves");
  });
});
