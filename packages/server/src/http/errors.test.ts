// Error bodies of docs/reference.md §7 and docs/decisions.md "Responses the contract leaves open": 400, 404, 405, 413, 422, 431,
// 500 and 503 exactly as specified, and bad input of every kind answered without a crash or a
// stack trace.

import assert from "node:assert/strict";
import http from "node:http";
import net, { type AddressInfo } from "node:net";
import { after, before, describe, test } from "node:test";
import { signRequest } from "@counterpart/protocol";
import { Type } from "typebox";
import { limits } from "../config/limits.ts";
import { inTransaction, ServiceUnavailableError } from "../db/transaction.ts";
import { startTestContext, type TestContext } from "../testing/harness.ts";
import { HttpError } from "./http-error.ts";

describe("error responses", () => {
  let ctx: TestContext;
  let calls = 0;
  before(async () => {
    ctx = await startTestContext({
      extraRoutes: (app) => {
        app.get("/v1/partner/test-boom", async () => {
          throw new Error("secret internal detail at /srv/app.ts:12");
        });
        app.get("/v1/partner/test-busy", async () =>
          inTransaction(ctx.services.database.db, async () => {
            calls++;
            throw Object.assign(new Error("could not serialize access"), { code: "40001" });
          }),
        );
        app.post(
          "/v1/partner/test-echo",
          {
            schema: {
              body: Type.Object(
                {
                  amount: Type.String({ maxLength: 10 }),
                  side: Type.Union([Type.Literal("buy"), Type.Literal("sell")]),
                  nested: Type.Optional(Type.Object({ n: Type.Integer({ minimum: 1 }) })),
                },
                { additionalProperties: false },
              ),
              querystring: Type.Object({ page: Type.Optional(Type.Integer({ minimum: 1 })) }),
            },
          },
          async (request) => ({ result: request.body }),
        );
        // Keywords the 422 mapping has no Pydantic name for: their text must still be ours.
        app.post(
          "/v1/partner/test-rules",
          {
            schema: {
              body: Type.Object(
                {
                  tags: Type.Optional(Type.Array(Type.String(), { uniqueItems: true })),
                  step: Type.Optional(Type.Integer({ multipleOf: 5 })),
                  bag: Type.Optional(Type.Object({}, { minProperties: 1, maxProperties: 2 })),
                  code: Type.Optional(Type.String({ pattern: "^[A-Z]{3}$" })),
                  id: Type.Optional(Type.String({ format: "uuid" })),
                  when: Type.Optional(Type.String({ format: "date-time" })),
                  list: Type.Optional(Type.Array(Type.Integer(), { contains: Type.Literal(1) })),
                  pick: Type.Optional(Type.Union([Type.Integer(), Type.Boolean()])),
                  not: Type.Optional(Type.Unsafe<unknown>({ not: { type: "string" } })),
                },
                { additionalProperties: false },
              ),
            },
          },
          async (request) => ({ result: request.body }),
        );
        app.get("/v1/partner/test-db-down", async () => {
          throw Object.assign(new Error("sorry, too many clients already"), { code: "53300" });
        });
        app.get("/v1/partner/test-app-error", async () => {
          throw new HttpError("invalid_client");
        });
      },
    });
  });
  after(async () => {
    await ctx.close();
  });

  test("404 for an unknown public route, with the contract's body", async () => {
    const res = await ctx.app.inject({ method: "GET", url: "/v1/public/nothing" });
    assert.equal(res.statusCode, 404);
    assert.deepEqual(res.json(), { code: 404, msg: "Not Found", msg_detail: null });
    const asset = await ctx.app.inject({ method: "GET", url: "/v1/public/assets/NOPE" });
    assert.equal(asset.statusCode, 404);
    assert.deepEqual(asset.json(), { code: 404, msg: "Not Found", msg_detail: null });
  });

  test("405 for a known public path with another method", async () => {
    const res = await ctx.app.inject({ method: "POST", url: "/v1/public/countries" });
    assert.equal(res.statusCode, 405);
    assert.deepEqual(res.json(), { code: 405, msg: "Method Not Allowed", msg_detail: null });
  });

  test("500: unexpected failures give the fixed body and never leak details", async () => {
    const res = await ctx.signed({ method: "GET", url: "/v1/partner/test-boom" });
    assert.equal(res.statusCode, 500);
    assert.equal(res.body, '{"code":500,"msg":"Internal Server Error","msg_detail":null}');
  });

  test("503 after the bounded retries of a serialisation failure", async () => {
    calls = 0;
    const res = await ctx.signed({ method: "GET", url: "/v1/partner/test-busy" });
    assert.equal(res.statusCode, 503);
    assert.deepEqual(res.json(), { code: 503, msg: "Service Unavailable", msg_detail: null });
    assert.equal(calls, limits.transactionRetriesMax + 1);
  });

  test("503 when the database refuses connections; nothing about it leaks", async () => {
    const res = await ctx.signed({ method: "GET", url: "/v1/partner/test-db-down" });
    assert.equal(res.statusCode, 503);
    assert.equal(res.body, '{"code":503,"msg":"Service Unavailable","msg_detail":null}');
  });

  test("inTransaction retries a deadlock and then succeeds", async () => {
    let n = 0;
    const out = await inTransaction(ctx.services.database.db, async () => {
      n++;
      if (n < 3) throw Object.assign(new Error("deadlock detected"), { code: "40P01" });
      return "done";
    });
    assert.equal(out, "done");
    assert.equal(n, 3);
    await assert.rejects(
      inTransaction(ctx.services.database.db, async () => {
        throw Object.assign(new Error("x"), { code: "40001" });
      }),
      ServiceUnavailableError,
    );
  });

  test("application errors carry code, msg and a null msg_detail", async () => {
    const res = await ctx.signed({ method: "GET", url: "/v1/partner/test-app-error" });
    assert.equal(res.statusCode, 400);
    assert.deepEqual(res.json(), { code: 2008, msg: "Invalid client ID", msg_detail: null });
  });

  test("422 in the Pydantic shape: missing, extra, enum, type, length, nested", async () => {
    const res = await ctx.signed({
      method: "POST",
      url: "/v1/partner/test-echo",
      body: { amount: 5, side: "hold", extra: true, nested: { n: 0 } },
    });
    assert.equal(res.statusCode, 422);
    const body = res.json();
    assert.equal(body.code, 422);
    assert.equal(body.msg, "Validation Error");
    const byType = Object.fromEntries(
      body.msg_detail.map((d: { type: string; loc: unknown[] }) => [d.type, d.loc]),
    );
    assert.deepEqual(byType.string_type, ["body", "amount"]);
    assert.deepEqual(byType.enum ?? byType.literal_error, ["body", "side"]);
    assert.deepEqual(byType.extra_forbidden, ["body", "extra"]);
    assert.deepEqual(byType.greater_than_equal, ["body", "nested", "n"]);
    for (const d of body.msg_detail) assert.equal(typeof d.msg, "string");

    const missing = await ctx.signed({ method: "POST", url: "/v1/partner/test-echo", body: {} });
    assert.deepEqual(
      missing.json().msg_detail.map((d: { loc: unknown[]; type: string }) => [d.loc, d.type]),
      [
        [["body", "amount"], "missing"],
        [["body", "side"], "missing"],
      ],
    );
    const long = await ctx.signed({
      method: "POST",
      url: "/v1/partner/test-echo",
      body: { amount: "12345678901", side: "buy" },
    });
    assert.deepEqual(long.json().msg_detail, [
      { loc: ["body", "amount"], msg: "String should have at most 10 characters", type: "string_too_long" },
    ]);
  });

  test("422 for query values, with loc query", async () => {
    const res = await ctx.signed({
      method: "POST",
      url: "/v1/partner/test-echo?page=0",
      body: { amount: "1", side: "buy" },
    });
    assert.equal(res.statusCode, 422);
    assert.deepEqual(res.json().msg_detail, [
      {
        loc: ["query", "page"],
        msg: "Input should be greater than or equal to 1",
        type: "greater_than_equal",
      },
    ]);
    const nan = await ctx.signed({
      method: "POST",
      url: "/v1/partner/test-echo?page=abc",
      body: { amount: "1", side: "buy" },
    });
    assert.equal(nan.json().msg_detail[0].type, "int_parsing");
  });

  test("422 for a union of literals names every literal, in the body and in the query", async () => {
    const side = await ctx.signed({
      method: "POST",
      url: "/v1/partner/test-echo",
      body: { amount: "1", side: "hold" },
    });
    assert.deepEqual(side.json().msg_detail, [
      { loc: ["body", "side"], msg: "Input should be 'buy' or 'sell'", type: "literal_error" },
    ]);
    const orders = await ctx.signed({ method: "GET", url: "/v1/partner/orders?status=nope&source=nope" });
    assert.equal(orders.statusCode, 422);
    assert.deepEqual(orders.json().msg_detail, [
      {
        loc: ["query", "source", 0],
        msg:
          "Input should be 'bank', 'card', 'blockchain', 'referral', 'bonus', 'market', 'limit', 'fee', " +
          "'entity_change' or 'platform_specific'",
        type: "literal_error",
      },
      {
        loc: ["query", "status", 0],
        msg:
          "Input should be 'new', 'open', 'pending', 'processing', 'completed', 'expired', " +
          "'queued_cancel', 'canceled', 'rejected' or 'failed'",
        type: "literal_error",
      },
    ]);
  });

  test("422 for a nullable field is one entry, and its type error names null", async () => {
    const execute = (body: Record<string, unknown>) =>
      ctx.signed({
        method: "POST",
        url: "/v1/partner/quotes/execute",
        body: { partner_client_id: "client-1", token: `qt_${"A".repeat(43)}`, ...body },
      });
    const wrongType = await execute({ partner_order_ref: 5 });
    assert.equal(wrongType.statusCode, 422);
    assert.deepEqual(wrongType.json().msg_detail, [
      {
        loc: ["body", "partner_order_ref"],
        msg: "Input should be a valid string or null",
        type: "string_type",
      },
    ]);
    const empty = await execute({ partner_order_ref: "" });
    assert.equal(empty.statusCode, 422);
    assert.deepEqual(empty.json().msg_detail, [
      {
        loc: ["body", "partner_order_ref"],
        msg: "String should have at least 1 character",
        type: "string_too_short",
      },
    ]);
  });

  test("invalid JSON is a 422 json_invalid, but only after authentication", async () => {
    const bad = await ctx.signed({ method: "POST", url: "/v1/partner/test-echo", body: '{"amount": "1",' });
    assert.equal(bad.statusCode, 422);
    assert.equal(bad.json().msg_detail[0].type, "json_invalid");
    assert.deepEqual(bad.json().msg_detail[0].loc, ["body"]);
    const unsigned = await ctx.app.inject({
      method: "POST",
      url: "/v1/partner/test-echo",
      headers: { "content-type": "application/json" },
      payload: '{"amount": "1",',
    });
    assert.equal(unsigned.statusCode, 401);
  });

  test("JSON nested deeper than the limit, NUL bytes and lone surrogates are a 422", async () => {
    const deep = `${"[".repeat(limits.jsonDepthMax + 1)}${"]".repeat(limits.jsonDepthMax + 1)}`;
    const d = await ctx.signed({ method: "POST", url: "/v1/partner/test-echo", body: deep });
    assert.equal(d.statusCode, 422);
    assert.equal(d.json().msg_detail[0].type, "json_invalid");
    const veryDeep = `${"[".repeat(100_000)}${"]".repeat(100_000)}`;
    assert.equal(
      (await ctx.signed({ method: "POST", url: "/v1/partner/test-echo", body: veryDeep })).statusCode,
      422,
    );

    const nul = await ctx.signed({
      method: "POST",
      url: "/v1/partner/test-echo",
      body: '{"amount":"1\\u0000","side":"buy"}',
    });
    assert.equal(nul.statusCode, 422);
    assert.deepEqual(nul.json().msg_detail[0].loc, ["body", "amount"]);
    const lone = await ctx.signed({
      method: "POST",
      url: "/v1/partner/test-echo",
      body: '{"amount":"\\ud800","side":"buy"}',
    });
    assert.equal(lone.statusCode, 422);
    assert.equal(lone.json().msg_detail[0].type, "string_unicode");
    const q = await ctx.signed({
      method: "POST",
      url: "/v1/partner/test-echo?page=%00",
      body: { amount: "1", side: "buy" },
    });
    assert.equal(q.statusCode, 422);
    assert.deepEqual(q.json().msg_detail[0].loc, ["query", "page"]);
  });

  test("a body that is not a JSON object, or no body, is a 422", async () => {
    for (const body of ["[]", '"x"', "null", "42"]) {
      const res = await ctx.signed({ method: "POST", url: "/v1/partner/test-echo", body });
      assert.equal(res.statusCode, 422, body);
      assert.deepEqual(res.json().msg_detail[0].loc, ["body"], body);
    }
    const none = await ctx.signed({ method: "POST", url: "/v1/partner/test-echo" });
    assert.equal(none.statusCode, 422);
  });

  test("413 for a JSON body over 1 MiB, before authentication", async () => {
    const big = JSON.stringify({ amount: "x".repeat(limits.jsonBodyBytesMax) });
    const res = await ctx.app.inject({
      method: "POST",
      url: "/v1/partner/test-echo",
      headers: { "content-type": "application/json" },
      payload: big,
    });
    assert.equal(res.statusCode, 413);
    assert.deepEqual(res.json(), { code: 413, msg: "Payload Too Large", msg_detail: null });
  });

  test("431 for headers over 16 KiB, and 413 announced by Content-Length, on a real socket", async () => {
    await ctx.app.listen({ port: 0, host: "127.0.0.1" });
    const { port } = ctx.app.server.address() as AddressInfo;
    const big = await new Promise<{ status: number; body: string }>((resolve, reject) => {
      const req = http.request(
        {
          host: "127.0.0.1",
          port,
          path: "/v1/public/assets",
          headers: { "x-big": "a".repeat(limits.headerBytesMax + 1) },
        },
        (res) => {
          let body = "";
          res.on("data", (c) => (body += c));
          res.on("end", () => resolve({ status: res.statusCode ?? 0, body }));
        },
      );
      req.on("error", reject);
      req.end();
    });
    assert.equal(big.status, 431);
    assert.deepEqual(JSON.parse(big.body), {
      code: 431,
      msg: "Request Header Fields Too Large",
      msg_detail: null,
    });

    const announced = await new Promise<{ status: number; body: string }>((resolve, reject) => {
      const req = http.request(
        {
          host: "127.0.0.1",
          port,
          method: "POST",
          path: "/v1/partner/test-echo",
          headers: {
            "content-type": "application/json",
            "content-length": String(limits.jsonBodyBytesMax + 1),
          },
        },
        (res) => {
          let body = "";
          res.on("data", (c) => (body += c));
          res.on("end", () => resolve({ status: res.statusCode ?? 0, body }));
        },
      );
      req.on("error", reject);
      // Only a few bytes are sent: the answer must come from the announced length alone.
      req.write("{");
    });
    assert.equal(announced.status, 413);
    assert.deepEqual(JSON.parse(announced.body), { code: 413, msg: "Payload Too Large", msg_detail: null });
  });

  test("400 bad_request for HTTP no route can read, on a real socket, and the process answers after", async () => {
    if (!ctx.app.server.listening) await ctx.app.listen({ port: 0, host: "127.0.0.1" });
    const { port } = ctx.app.server.address() as AddressInfo;
    const raw = (bytes: string) =>
      new Promise<string>((resolve, reject) => {
        const socket = net.connect(port, "127.0.0.1", () => socket.end(bytes));
        let answer = "";
        socket.setEncoding("latin1");
        socket.on("data", (c) => (answer += c));
        socket.on("end", () => resolve(answer));
        socket.on("error", reject);
        socket.setTimeout(10_000, () => socket.destroy(new Error("no answer within 10 s")));
      });
    for (const request of [
      "GET -v1/public/assets HTTP/1.1\r\nHost: x\r\n\r\n",
      "GET v1/public/assets HTTP/1.1\r\nHost: x\r\n\r\n",
      "GET /v1/public/assets HTTP/9.9\r\nHost: x\r\n\r\n",
      "GET /v1/public/assets HTTP/1.1\r\nHo st: x\r\n\r\n",
      "\u0000\u0001\u0002 garbage\r\n\r\n",
    ]) {
      const answer = await raw(request);
      const [head = "", body] = answer.split("\r\n\r\n");
      assert.match(head, /^HTTP\/1\.1 400 Bad Request\r\n/, JSON.stringify(request));
      assert.match(head, /\r\nConnection: close\r\n/i);
      assert.deepEqual(JSON.parse(body ?? ""), { code: 400, msg: "Bad Request", msg_detail: null });
    }
    const res = await fetch(`http://127.0.0.1:${port}/v1/public/assets`);
    assert.equal(res.status, 200);
  });

  test("malformed paths, queries and headers never crash the process", async () => {
    const targets = [
      "/v1/public/assets/%",
      "/v1/public/assets/%E0%A4%A",
      "/v1/public/countries/%00",
      "/v1/public/assets?x=%",
      "/v1/partner/asset-pairs/%ZZ",
      "//v1/public/assets",
      "/v1/public/assets/" + "a".repeat(600),
    ];
    for (const url of targets) {
      const res = await ctx.app.inject({ method: "GET", url });
      assert.ok([200, 401, 404, 422].includes(res.statusCode), `${url}: ${res.statusCode}`);
      assert.doesNotMatch(res.body, /at .*\.ts:\d+|stack/i);
      if (res.statusCode !== 200) assert.equal(typeof res.json().code, "number");
    }
    assert.equal((await ctx.app.inject({ method: "GET", url: "/v1/public/assets/%" })).statusCode, 404);
    assert.equal(
      (await ctx.app.inject({ method: "GET", url: "/v1/partner/asset-pairs/%ZZ" })).statusCode,
      401,
    );
    assert.equal((await ctx.signed({ method: "GET", url: "/v1/partner/asset-pairs/%ZZ" })).statusCode, 404);
    const weird = await ctx.app.inject({
      method: "GET",
      url: "/v1/partner/asset-pairs",
      headers: {
        "x-partner-id": "\u00ff\u00fe",
        "x-timestamp": "9".repeat(400),
        "x-signature": "=".repeat(88),
      },
    });
    assert.equal(weird.statusCode, 401);
    const h = signRequest({
      partnerId: ctx.partner.id,
      privateKey: ctx.partner.privateKeyPem,
      method: "GET",
      target: "/v1/partner/asset-pairs",
      nowMs: ctx.clock.nowMs(),
    });
    assert.equal(
      (await ctx.app.inject({ method: "GET", url: "/v1/partner/asset-pairs", headers: h })).statusCode,
      200,
    );
  });

  test("no error body carries a library's words or a piece of the request, for a catalogue of bad input", async () => {
    // Text of JSON.parse, Ajv, Fastify, Node and pg errors, and what a stack trace looks like.
    const libraryText =
      /Unexpected (token|end|non-whitespace)|at position|in JSON|JSON\.parse|is not valid JSON|\bmust (be|have|match|not|equal|pass|contain)\b|FST_|\bpg\b|postgres|SyntaxError|TypeError|RangeError|Error:|\n\s*at |ajv|fastify|node:|\.(ts|js):\d|ECONN|HPE_|ERR_/i;
    const responses: { what: string; status: number; body: string }[] = [];
    const note = (what: string, res: { statusCode: number; body: string }) =>
      responses.push({ what, status: res.statusCode, body: res.body });

    const bodies = [
      "{",
      '{"amount":}',
      "[1,]",
      '{"amount":"1"}x',
      "{'amount':'1'}",
      '{"amount":"\u0001"',
      '{"amount":"a\u0001b","side":"buy"}'.replace("\\u0001", "\u0001"),
      "\ufeff{}",
      '{"amount":1e999999,"side":"buy"}',
      "NaN",
      "undefined",
      '{"amount":"\\x41","side":"buy"}',
      '{"amount":"\\ud800","side":"buy"}',
      '{"__proto__":{"admin":true},"amount":"1","side":"buy"}',
      '{"constructor":{"prototype":{"x":1}},"amount":"1","side":"buy"}',
      `${"[".repeat(100)}${"]".repeat(100)}`,
      "",
      " ",
      '{"amount":"1","side":"buy","nested":{"n":"x"}}',
      '{"amount":["1"],"side":{"x":1}}',
    ];
    for (const body of bodies) {
      note(`echo ${body}`, await ctx.signed({ method: "POST", url: "/v1/partner/test-echo", body }));
      note(`deposit ${body}`, await ctx.signed({ method: "POST", url: "/v1/partner/deposits", body }));
    }
    const rules = [
      { tags: ["a", "a"] },
      { step: 7 },
      { bag: {} },
      { bag: { a: 1, b: 2, c: 3 } },
      { code: "abcd" },
      { id: "not-a-uuid" },
      { when: "yesterday" },
      { list: [2, 3] },
      { pick: "x" },
      { not: "x" },
      { unknown: 1 },
    ];
    for (const body of rules) {
      note(
        `rules ${JSON.stringify(body)}`,
        await ctx.signed({ method: "POST", url: "/v1/partner/test-rules", body }),
      );
    }
    for (const [contentType, payload] of [
      ["text/plain", "amount=1"],
      ["application/json; charset=utf-16", Buffer.from('{"amount":"1","side":"buy"}', "utf16le")],
      ["application/x-www-form-urlencoded", "amount=1&side=buy"],
      ["multipart/form-data; boundary=x", "--x\r\nContent-Disposition: form-data; name=a\r\n\r\n1\r\n--x--"],
      ["application/json", Buffer.from([0x7b, 0x22, 0xff, 0x22, 0x7d])],
    ] as const) {
      note(
        `content-type ${contentType}`,
        await ctx.signed({
          method: "POST",
          url: "/v1/partner/test-echo",
          body: payload,
          headers: { "content-type": contentType },
        }),
      );
    }
    for (const query of [
      "page=1e3",
      "page=%",
      "page[]=1",
      "page=1&page=2",
      "__proto__=1",
      "page=%FF",
      "page=-0x1",
    ]) {
      note(`query ${query}`, await ctx.signed({ method: "GET", url: `/v1/partner/orders?${query}` }));
    }
    const admin = (method: "POST" | "PUT", url: string, payload: string) =>
      ctx.admin.inject({
        method,
        url,
        headers: { authorization: `Bearer ${ctx.adminToken}`, "content-type": "application/json" },
        payload,
      });
    note("admin create partner, invalid JSON", await admin("POST", "/admin/partners", '{"name":'));
    note(
      "admin create partner, wrong types",
      await admin("POST", "/admin/partners", '{"name":1,"allow_ips":"x"}'),
    );
    note(
      "admin active, wrong type",
      await admin("PUT", `/admin/partners/${ctx.partner.id}/active`, '{"active":"yes"}'),
    );
    note("admin active, bad id", await admin("PUT", "/admin/partners/%00/active", '{"active":true}'));
    note(
      "admin active, not UTF-8",
      await admin("PUT", `/admin/partners/${ctx.partner.id}/active`, '{"active":"\udc00"}'),
    );
    note(
      "admin key, not a key",
      await admin("PUT", `/admin/partners/${ctx.partner.id}/key`, '{"public_key_pem":"-----BEGIN"}'),
    );

    assert.ok(responses.length > 50);
    // Unknown query names are ignored, so those two are answered 200.
    const ignored = new Set(["query page[]=1", "query __proto__=1"]);
    for (const r of responses) {
      assert.doesNotMatch(r.body, libraryText, r.what);
      if (ignored.has(r.what)) continue;
      assert.ok(r.status >= 400 && r.status < 500, `${r.what}: status ${r.status} ${r.body}`);
      const body = JSON.parse(r.body) as { code: number; msg: string; msg_detail: unknown };
      assert.deepEqual(Object.keys(body), ["code", "msg", "msg_detail"], r.what);
    }
    const json = responses.find((r) => r.what === "echo {")!;
    assert.deepEqual(JSON.parse(json.body).msg_detail, [
      { loc: ["body"], msg: "Request body is not a JSON document", type: "json_invalid" },
    ]);
    const unmapped = responses.find((r) => r.what === 'rules {"tags":["a","a"]}')!;
    assert.deepEqual(JSON.parse(unmapped.body).msg_detail, [
      { loc: ["body", "tags"], msg: "Input is not valid here", type: "value_error" },
    ]);
  });

  test("every response carries a request id; a sane given one is echoed", async () => {
    const res = await ctx.app.inject({
      method: "GET",
      url: "/v1/public/assets",
      headers: { "x-request-id": "abc-123" },
    });
    assert.equal(res.headers["x-request-id"], "abc-123");
    const bad = await ctx.app.inject({
      method: "GET",
      url: "/v1/public/assets",
      headers: { "x-request-id": "a b\u0001" },
    });
    assert.match(String(bad.headers["x-request-id"]), /^[0-9a-f-]{36}$/);
  });
});
