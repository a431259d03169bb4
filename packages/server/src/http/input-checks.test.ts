// Input that is refused before any use case sees it (docs/decisions.md, "Hardening"): integers in
// query strings are decimal digits only, and bytes that are not UTF-8 are a 422 wherever they can
// reach a value (body, query), never a silent replacement.

import assert from "node:assert/strict";
import type { AddressInfo } from "node:net";
import { after, before, beforeEach, describe, test } from "node:test";
import { signRequest } from "@counterpart/protocol";
import fc from "fast-check";
import { clientsState, insertClient } from "../testing/fixtures.ts";
import { startTestContext, type TestContext } from "../testing/harness.ts";
import { type MoneyState, moneyState } from "../testing/money-state.ts";
import { rawRequest } from "../testing/raw-http.ts";
import { percentDecoded } from "./input-checks.ts";

test("a percent-encoded piece decodes to what was encoded, and nothing else does", () => {
  fc.assert(
    fc.property(fc.string({ unit: "grapheme", maxLength: 40 }), (text) => {
      assert.equal(percentDecoded(encodeURIComponent(text)), text);
    }),
    { numRuns: 500 },
  );
  const visibleAscii = fc.integer({ min: 0x21, max: 0x7e }).map((c) => String.fromCharCode(c));
  fc.assert(
    fc.property(fc.string({ unit: visibleAscii, maxLength: 40 }), (text) => {
      // Visible ASCII stands for itself; with every `%` escaped, it decodes back to itself.
      if (!text.includes("%")) assert.equal(percentDecoded(text), text);
      assert.equal(percentDecoded(text.replaceAll("%", "%25")), text);
    }),
    { numRuns: 500 },
  );
  for (const refused of [
    "a b",
    "caf\u00e9",
    "%",
    "%4",
    "%zz",
    "%FF",
    "%C3",
    "%ED%A0%80",
    "tab\there",
    "\u007f",
  ]) {
    assert.equal(percentDecoded(refused), null, JSON.stringify(refused));
  }
  assert.equal(percentDecoded("caf%C3%A9"), "caf\u00e9");
  assert.equal(percentDecoded(""), "");
});

const intParsing = "Input should be a valid integer, unable to parse string as an integer";

describe("strict integers in query strings", () => {
  let ctx: TestContext;
  before(async () => {
    ctx = await startTestContext();
    await insertClient(ctx.services.database.db, ctx.partner.id, 1);
  });
  after(async () => {
    await ctx.close();
  });

  const lists = ["/v1/partner/orders", "/v1/partner/clients", "/v1/partner/clients/client-1/documents"];
  // As they appear in the query string: exponent, hex, octal and binary prefixes, a plus sign,
  // spaces (encoded and as `+`), empty, a fraction, separators, non-ASCII digits, words.
  const loose = [
    "1e3",
    "1E1",
    "0x10",
    "0o7",
    "0b1",
    "%2B5",
    "%205",
    "5%20",
    "+5",
    "5+",
    "%095",
    "",
    "1.0",
    "1.",
    ".5",
    "1_0",
    "1,0",
    "--1",
    "1-",
    "%D9%A3",
    "%EF%BC%95",
    "Infinity",
    "NaN",
    "true",
  ];

  test("anything but decimal digits is a 422 int_parsing at [query, name] on every list", async () => {
    for (const url of lists) {
      for (const name of ["page", "page_size"]) {
        for (const value of loose) {
          const res = await ctx.signed({ method: "GET", url: `${url}?${name}=${value}` });
          assert.equal(res.statusCode, 422, `${url} ${name}=${value}: ${res.body}`);
          assert.deepEqual(
            res.json(),
            {
              code: 422,
              msg: "Validation Error",
              msg_detail: [{ loc: ["query", name], msg: intParsing, type: "int_parsing" }],
            },
            `${url} ${name}=${value}`,
          );
        }
      }
    }
  });

  test("decimal digits are read as the integer they write; bounds still apply", async () => {
    for (const url of lists) {
      const ok = await ctx.signed({ method: "GET", url: `${url}?page=002&page_size=7` });
      assert.equal(ok.statusCode, 200, `${url}: ${ok.body}`);
      assert.equal(ok.json().page, 2);
      assert.equal(ok.json().page_size, 7);
      const below = await ctx.signed({ method: "GET", url: `${url}?page=-1` });
      assert.equal(below.statusCode, 422);
      assert.deepEqual(below.json().msg_detail, [
        {
          loc: ["query", "page"],
          msg: "Input should be greater than or equal to 1",
          type: "greater_than_equal",
        },
      ]);
      const above = await ctx.signed({ method: "GET", url: `${url}?page_size=101` });
      assert.equal(above.statusCode, 422);
      assert.deepEqual(above.json().msg_detail, [
        {
          loc: ["query", "page_size"],
          msg: "Input should be less than or equal to 100",
          type: "less_than_equal",
        },
      ]);
    }
  });

  test("every loose value is reported with the query's other errors", async () => {
    const res = await ctx.signed({
      method: "GET",
      url: "/v1/partner/orders?page=1e3&page_size=0x10&status=nope",
    });
    assert.equal(res.statusCode, 422);
    const got = res.json().msg_detail.map((d: { loc: unknown[]; type: string }) => [d.loc, d.type]);
    assert.deepEqual(
      got.sort((a: unknown[], b: unknown[]) => JSON.stringify(a).localeCompare(JSON.stringify(b))),
      [
        [["query", "page"], "int_parsing"],
        [["query", "page_size"], "int_parsing"],
        [["query", "status", 0], "literal_error"],
      ].sort((a, b) => JSON.stringify(a).localeCompare(JSON.stringify(b))),
    );
  });
});

describe("bytes that are not UTF-8", () => {
  let ctx: TestContext;
  let port: number;
  let money: MoneyState;
  before(async () => {
    ctx = await startTestContext();
    await insertClient(ctx.services.database.db, ctx.partner.id, 1);
    await ctx.app.listen({ port: 0, host: "127.0.0.1" });
    port = (ctx.app.server.address() as AddressInfo).port;
  });
  after(async () => {
    await ctx.close();
  });
  beforeEach(async () => {
    money = await moneyState(ctx.services.database.db);
  });

  const utf8Invalid = {
    code: 422,
    msg: "Validation Error",
    msg_detail: [{ loc: ["body"], msg: "Request body is not valid UTF-8", type: "utf8_invalid" }],
  };
  let n = 0;
  /** A deposit body whose partner_order_ref holds `bytes` between two ASCII letters. */
  const depositWith = (bytes: number[]) =>
    Buffer.concat([
      Buffer.from(
        `{"partner_client_id":"client-1","asset_id":"AED","amount":"1","partner_order_ref":"r${++n}-a`,
      ),
      Buffer.from(bytes),
      Buffer.from('b"}'),
    ]);

  test("a JSON body with bytes that are not UTF-8 is a 422 utf8_invalid, and nothing is stored", async () => {
    const sequences: [string, number[]][] = [
      ["a lone continuation byte", [0x80]],
      ["0xFF", [0xff]],
      ["0xFE 0xFF", [0xfe, 0xff]],
      ["a truncated 3-byte sequence", [0xe2, 0x82]],
      ["an overlong '/'", [0xc0, 0xaf]],
      ["an overlong NUL", [0xc0, 0x80]],
      ["a UTF-8-encoded surrogate", [0xed, 0xa0, 0x80]],
      ["a code point above U+10FFFF", [0xf4, 0x90, 0x80, 0x80]],
      ["Latin-1 é", [0xe9]],
    ];
    for (const [why, bytes] of sequences) {
      const res = await ctx.signed({
        method: "POST",
        url: "/v1/partner/deposits",
        body: depositWith(bytes),
        headers: { "content-type": "application/json" },
      });
      assert.equal(res.statusCode, 422, `${why}: ${res.body}`);
      assert.deepEqual(res.json(), utf8Invalid, why);
      assert.deepEqual(await moneyState(ctx.services.database.db), money, why);
    }
    // The same body with valid UTF-8 in the same place is a deposit, stored exactly as sent.
    const res = await ctx.signed({
      method: "POST",
      url: "/v1/partner/deposits",
      body: depositWith([0xc3, 0xa9]),
      headers: { "content-type": "application/json" },
    });
    assert.equal(res.statusCode, 200, res.body);
    assert.equal(res.json().result.partner_order_ref, `r${n}-aéb`);
  });

  test("a client body with a Latin-1 name is refused, not stored with U+FFFD", async () => {
    const before_ = await clientsState(ctx.services.database.db);
    const body = Buffer.from(
      JSON.stringify({ partner_client_id: "latin", name: "Jos\u00e9" }).replace("\u00e9", "\u0000"),
      "utf8",
    );
    body[body.indexOf(0)] = 0xe9;
    const res = await ctx.signed({
      method: "POST",
      url: "/v1/partner/clients",
      body,
      headers: { "content-type": "application/json" },
    });
    assert.equal(res.statusCode, 422);
    assert.deepEqual(res.json(), utf8Invalid);
    assert.deepEqual(await clientsState(ctx.services.database.db), before_);
  });

  test("a query value or name whose escapes are not UTF-8 is a 422 at [query, name]", async () => {
    const cases: [string, (string | number)[]][] = [
      ["partner_client_id=%FF", ["query", "partner_client_id"]],
      ["partner_client_id=client-%C3", ["query", "partner_client_id"]],
      ["partner_client_id=%ED%A0%80", ["query", "partner_client_id"]],
      ["partner_client_id=%C0%AF", ["query", "partner_client_id"]],
      ["partner_client_id=%zz", ["query", "partner_client_id"]],
      ["partner_client_id=50%", ["query", "partner_client_id"]],
      ["%FF=1", ["query", "%FF"]],
    ];
    for (const [query, loc] of cases) {
      const res = await ctx.signed({ method: "GET", url: `/v1/partner/orders?${query}` });
      assert.equal(res.statusCode, 422, `${query}: ${res.body}`);
      assert.deepEqual(
        res.json().msg_detail,
        [{ loc, msg: "Input should be percent-encoded UTF-8", type: "string_unicode" }],
        query,
      );
    }
    // Cleanly encoded UTF-8 is read: a client id with é is a client, just not this partner's.
    const ok = await ctx.signed({
      method: "GET",
      url: "/v1/partner/orders?partner_client_id=client-1&page=1",
    });
    assert.equal(ok.statusCode, 200);
    const accented = await ctx.signed({
      method: "GET",
      url: "/v1/partner/balances?partner_client_id=cl%C3%A9",
    });
    assert.equal(accented.statusCode, 400);
    assert.equal(accented.json().code, 2008);
  });

  test("a path parameter whose escapes are not UTF-8 is a path that does not exist", async () => {
    const res = await ctx.signed({ method: "GET", url: "/v1/partner/orders/ref/r%FF1" });
    assert.equal(res.statusCode, 404);
    assert.deepEqual(res.json(), { code: 404, msg: "Not Found", msg_detail: null });
  });

  test("headers: a byte that is not ASCII in an authentication header is a 401", async () => {
    const sig = signRequest({
      partnerId: ctx.partner.id,
      privateKey: ctx.partner.privateKeyPem,
      method: "GET",
      target: "/v1/partner/asset-pairs",
      nowMs: ctx.clock.nowMs(),
    });
    for (const name of ["X-Partner-ID", "X-Timestamp", "X-Signature"] as const) {
      const value = Buffer.concat([Buffer.from(sig[name]), Buffer.from([0xff])]);
      const others = Object.entries(sig)
        .filter(([k]) => k !== name)
        .map(([k, v]) => `\r\n${k}: ${v}`)
        .join("");
      const head = Buffer.concat([
        Buffer.from(`GET /v1/partner/asset-pairs HTTP/1.1\r\nHost: 127.0.0.1${others}\r\n${name}: `),
        value,
      ]);
      const res = await rawRequest(port, head);
      assert.equal(res.status, 401, name);
      assert.equal(res.body, '{"code":401,"msg":"Unauthorized","msg_detail":null}', name);
    }
  });
});
