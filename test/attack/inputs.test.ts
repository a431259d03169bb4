// Attack suite: what a signed body and its headers may hold. Fields the partner does not own are
// never taken from the body (mass assignment); hostile decimals, oversized, deep, broken or
// badly-encoded JSON and oversized headers get the documented answer in our own words
// (docs/errors.md), and none of them changes anything or stops a process.

import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { clientPayload } from "../../packages/server/src/testing/fixtures.ts";
import {
  assert422,
  assertAlive,
  assertCode,
  assertPlain,
  everyCase,
  type RawResponse,
  startTarget,
  type Target,
  unchanged,
} from "./target.ts";

const timeout = 240_000;

interface Order {
  id: number;
  type: string;
  source: string;
  status: string;
  price: string | null;
  fee: string;
  vat: string;
  credit: string | null;
  credit_asset_id: string | null;
  debit: string | null;
  debit_asset_id: string | null;
  partner_client_id: string;
}

describe("attack: bodies, decimals and headers", { timeout }, () => {
  let t: Target;
  let client: string;
  let refNo = 0;
  const ref = () => `inputs-${++refNo}`;

  before(async () => {
    t = await startTarget();
    client = (await t.createClient(t.a, 1)).partnerClientId;
    const d = await t.deposit(t.a, client, "10000", ref());
    assert.equal(d.status, 200, d.text);
  });
  after(async () => {
    if (t !== undefined) {
      assertAlive(t);
      await t.close();
    }
  });

  const balance = async (id: string, asset: string) => {
    const res = await t.call({
      method: "GET",
      target: `/v1/partner/balances/${asset}?partner_client_id=${id}`,
    });
    assert.equal(res.status, 200, res.text);
    return (res.json as { result: { balance: string } }).result.balance;
  };

  test("client create: server-owned fields in the body are ignored; corporate is a 422", async () => {
    const forged = clientPayload(2, {
      id: 999_999,
      status: "rejected",
      active: false,
      verified_at: "2000-01-01T00:00:00Z",
      created_at: "2000-01-01T00:00:00Z",
      updated_at: "2000-01-01T00:00:00Z",
      partner_id: t.b.id,
    });
    const res = await t.call({ method: "POST", target: "/v1/partner/clients", body: forged });
    assert.equal(res.status, 201, res.text);
    const c = (res.json as { result: Record<string, unknown> }).result;
    assert.notEqual(c.id, 999_999);
    assert.equal(c.status, "verified");
    assert.equal(c.active, true);
    assert.ok(String(c.verified_at) > "2020", String(c.verified_at));
    assert.ok(String(c.created_at) > "2020", String(c.created_at));
    assert.equal("partner_id" in c, false);
    // It is A's client, not B's.
    const asB = await t.call({ partner: t.b, method: "GET", target: "/v1/partner/clients/client-2/" });
    assertCode(asB, 400, 2008, "Invalid client ID", "B reads A's forged client");
    const asA = await t.call({ method: "GET", target: "/v1/partner/clients/client-2/" });
    assert.equal(asA.status, 200, asA.text);

    await unchanged(t, async () => {
      assert422(
        await t.call({
          method: "POST",
          target: "/v1/partner/clients",
          body: clientPayload(3, { account_type: "corporate" }),
        }),
        [[["body", "account_type"], "literal_error"]],
        "corporate",
      );
    });
  });

  test("client update: status, active, times and ids in the body change nothing; immutable fields are a 422", async () => {
    const before = await t.call({ method: "GET", target: `/v1/partner/clients/${client}/` });
    const was = (before.json as { result: Record<string, unknown> }).result;
    const payload = clientPayload(1, {
      name: "Renamed Client",
      id: 424_242,
      status: "rejected",
      active: false,
      verified_at: null,
      created_at: "2000-01-01T00:00:00Z",
      partner_id: t.b.id,
    });
    for (const k of ["partner_client_id", "account_type", "birth_date", "place_of_birth_id"])
      delete payload[k];
    const res = await t.call({ method: "PUT", target: `/v1/partner/clients/${client}/`, body: payload });
    assert.equal(res.status, 200, res.text);
    const now = (res.json as { result: Record<string, unknown> }).result;
    assert.equal(now.name, "Renamed Client");
    for (const k of ["id", "status", "active", "verified_at", "created_at", "account_type", "birth_date"]) {
      assert.deepEqual(now[k], was[k], k);
    }
    await unchanged(t, async () => {
      const immutable = clientPayload(1, {
        account_type: "corporate",
        birth_date: "2001-01-01",
        place_of_birth_id: "sa",
      });
      assert422(
        await t.call({ method: "PUT", target: `/v1/partner/clients/${client}/`, body: immutable }),
        [
          [["body", "partner_client_id"], "extra_forbidden"],
          [["body", "account_type"], "extra_forbidden"],
          [["body", "birth_date"], "extra_forbidden"],
          [["body", "place_of_birth_id"], "extra_forbidden"],
        ],
        "immutable fields",
      );
    });
  });

  test("deposit: fee, status, type, source and price in the body are ignored", async () => {
    const was = await balance(client, "AED");
    const res = await t.call({
      method: "POST",
      target: "/v1/partner/deposits",
      body: {
        partner_client_id: client,
        asset_id: "AED",
        amount: "5",
        partner_order_ref: ref(),
        fee: "4",
        vat: "1",
        status: "failed",
        type: "withdrawal",
        source: "card",
        price: "1000",
        credit: "9999",
        debit: "1",
        partner_id: t.b.id,
      },
    });
    assert.equal(res.status, 200, res.text);
    const o = (res.json as { result: Order }).result;
    assert.deepEqual(
      { type: o.type, source: o.source, status: o.status, price: o.price, fee: o.fee, vat: o.vat },
      { type: "deposit", source: "bank", status: "completed", price: null, fee: "0E-8", vat: "0E-8" },
    );
    const expected = (BigInt(was.replace(".", "")) + 500_000_000n).toString();
    assert.equal((await balance(client, "AED")).replace(".", ""), expected);
    const bOrders = await t.call({ partner: t.b, method: "GET", target: `/v1/partner/orders/${o.id}` });
    assertPlain(bOrders, 404, "B reads A's order");
  });

  test("execute: price and base_amount in the body are ignored; the quote decides", async () => {
    const price = await t.admin("PUT", "/admin/pairs/BTC-AED/price", {
      buy: "350000",
      sell: "349000",
      reason: "test set-up",
    });
    assert.equal(price.status, 200, price.text);
    const q = await t.call({
      method: "POST",
      target: "/v1/partner/quotes",
      body: { partner_client_id: client, asset_pair: "BTC-AED", side: "buy", base_amount: "0.001" },
    });
    assert.equal(q.status, 200, q.text);
    const quote = (q.json as { result: { token: string; market_price: string; quote_amount: string } })
      .result;
    const res = await t.call({
      method: "POST",
      target: "/v1/partner/quotes/execute",
      body: {
        partner_client_id: client,
        token: quote.token,
        partner_order_ref: ref(),
        price: "0.01",
        base_amount: "5",
        side: "sell",
        asset_pair: "ETH-AED",
        fee: "0",
        status: "completed",
      },
    });
    assert.equal(res.status, 200, res.text);
    const o = (res.json as { result: Order }).result;
    assert.equal(o.type, "buy");
    assert.equal(o.price, quote.market_price);
    assert.equal(o.status, "completed");
    assert.equal(await balance(client, "BTC"), "0.00100000");
    const amounts = [o.credit, o.debit];
    assert.ok(amounts.includes("0.00100000"), JSON.stringify(o));
  });

  test("hostile decimals are a 422 at the amount, and change nothing", async () => {
    const cases: [unknown, string][] = [
      ["1e31", "decimal_parsing"],
      ["1e30", "less_than_equal"],
      ["1e16", "less_than_equal"],
      ["1000000000000000.00000001", "less_than_equal"],
      ["1e-31", "decimal_parsing"],
      ["1e999999999", "decimal_parsing"],
      ["1e-999999999", "decimal_parsing"],
      ["NaN", "decimal_parsing"],
      ["nan", "decimal_parsing"],
      ["sNaN", "decimal_parsing"],
      ["Infinity", "decimal_parsing"],
      ["-Infinity", "decimal_parsing"],
      ["inf", "decimal_parsing"],
      ["-0", "greater_than"],
      ["0", "greater_than"],
      ["0E-8", "greater_than"],
      ["0.00000000", "greater_than"],
      ["-1", "greater_than"],
      ["-0.00000001", "greater_than"],
      ["0x10", "decimal_parsing"],
      ["0b1", "decimal_parsing"],
      ["1_000", "decimal_parsing"],
      ["1,000", "decimal_parsing"],
      ["+1", "decimal_parsing"],
      [" 1", "decimal_parsing"],
      ["1 ", "decimal_parsing"],
      ["1 0", "decimal_parsing"],
      ["\t1", "decimal_parsing"],
      ["1.", "decimal_parsing"],
      [".5", "decimal_parsing"],
      ["1..0", "decimal_parsing"],
      ["1e", "decimal_parsing"],
      ["e5", "decimal_parsing"],
      ["", "decimal_parsing"],
      ["١", "decimal_parsing"],
      ["１", "decimal_parsing"],
      [`1${"0".repeat(40)}`, "decimal_parsing"],
      [`0.${"0".repeat(7)}1${"0".repeat(40)}`, "decimal_parsing"],
      ["1.000000001", "decimal_max_places"],
      ["0.000000001", "decimal_max_places"],
      ["1e-9", "decimal_max_places"],
      ["1".repeat(129), "string_too_long"],
      ["9".repeat(1_000_000), "string_too_long"],
      [1, "string_type"],
      [1.5, "string_type"],
      [1e31, "string_type"],
      [null, "string_type"],
      [true, "string_type"],
      [["1"], "string_type"],
      [{ value: "1" }, "string_type"],
    ];
    await unchanged(t, async () => {
      await everyCase(cases, async ([amount, type]) => {
        const res = await t.call({
          method: "POST",
          target: "/v1/partner/deposits",
          body: { partner_client_id: client, asset_id: "AED", amount, partner_order_ref: ref() },
        });
        assert422(res, [[["body", "amount"], type]], `amount ${JSON.stringify(amount).slice(0, 40)}`);
      });
      // The same on a withdrawal and on a quote's base amount.
      await everyCase(cases.slice(0, 12), async ([amount, type]) => {
        const w = await t.call({
          method: "POST",
          target: "/v1/partner/withdrawals",
          body: { partner_client_id: client, asset_id: "AED", amount, partner_order_ref: ref() },
        });
        assert422(w, [[["body", "amount"], type]], `withdrawal ${String(amount).slice(0, 40)}`);
        const q = await t.call({
          method: "POST",
          target: "/v1/partner/quotes",
          body: { partner_client_id: client, asset_pair: "BTC-AED", side: "sell", base_amount: amount },
        });
        assert422(q, [[["body", "base_amount"], type]], `quote ${String(amount).slice(0, 40)}`);
      });
      // An unknown pair is a 2013 before the base amount's places are judged against an asset.
      assertCode(
        await t.call({
          method: "POST",
          target: "/v1/partner/quotes",
          body: { partner_client_id: client, asset_pair: "NOPE-AED", side: "buy", base_amount: "1.0000001" },
        }),
        400,
        2013,
        "Invalid asset pair",
        "unknown pair with 7 decimals",
      );
    });
  });

  test("amounts with up to 8 decimals are taken whatever the asset's places, to the last unit", async () => {
    const was = BigInt((await balance(client, "AED")).replace(".", ""));
    const res = await t.deposit(t.a, client, "0.00000001", ref());
    assert.equal(res.status, 200, res.text);
    assert.equal(
      (res.json as { result: Order }).result.debit ?? (res.json as { result: Order }).result.credit,
      "1E-8",
    );
    assert.equal(BigInt((await balance(client, "AED")).replace(".", "")), was + 1n);
  });

  test("JSON over 1 MiB is a 413 before it is read; nesting depth 33 is a 422", async () => {
    await unchanged(t, async () => {
      // Announced over the limit: answered without sending the body.
      const s = t.sign({ method: "POST", target: "/v1/partner/deposits", body: "{}" });
      const head = s.bytes
        .toString("latin1")
        .split("\r\n\r\n")[0]!
        .replace("Content-Length: 2", "Content-Length: 2097152");
      const early = await t.raw(`${head}\r\n\r\n{"partner_client_id":`, 0, 5_000);
      assertPlain(early, 413, "announced 2 MiB");
      // Sent chunked, without a length: cut off past the limit.
      const big = Buffer.alloc(1024 * 1024 + 16, 0x20);
      const chunked = t.sign({
        method: "POST",
        target: "/v1/partner/deposits",
        body: big,
        headers: { "Transfer-Encoding": "chunked" },
      });
      const chunkedHead = chunked.bytes.toString("latin1").split("\r\n\r\n")[0]!;
      const chunks = Buffer.concat([
        Buffer.from(`${chunkedHead}\r\n\r\n${big.length.toString(16)}\r\n`, "latin1"),
        big,
        Buffer.from("\r\n0\r\n\r\n"),
      ]);
      assertPlain(await t.raw(chunks), 413, "chunked over 1 MiB");

      // Nesting: 32 levels are read (and the body is then not a deposit); 33 are not read.
      const nested = (depth: number) => `${'{"a":'.repeat(depth - 1)}{}${"}".repeat(depth - 1)}`;
      const deep32 = await t.call({ method: "POST", target: "/v1/partner/deposits", body: nested(32) });
      assert422(
        deep32,
        ["partner_client_id", "asset_id", "amount", "partner_order_ref"].map((f) => [["body", f], "missing"]),
        "depth 32",
      );
      assert422(
        await t.call({ method: "POST", target: "/v1/partner/deposits", body: nested(33) }),
        [[["body"], "json_invalid"]],
        "depth 33",
      );
      assert422(
        await t.call({
          method: "POST",
          target: "/v1/partner/deposits",
          body: `${"[".repeat(33)}${"]".repeat(33)}`,
        }),
        [[["body"], "json_invalid"]],
        "arrays, depth 33",
      );
      assert422(
        await t.call({
          method: "POST",
          target: "/v1/partner/deposits",
          body: `${"[".repeat(200_000)}${"]".repeat(200_000)}`,
        }),
        [[["body"], "json_invalid"]],
        "depth 200 000",
      );
    });
  });

  test("broken JSON is a 422 json_invalid with one fixed message of ours", async () => {
    await unchanged(t, async () => {
      // Whatever the parser thought, the partner reads our words.
      const broken = [
        '{"partner_client_id":',
        "{'a': 1}",
        '{"a": 1,}',
        "[1,]",
        '{"a": 1} x',
        "NaN",
        '{"a": 01}',
        '{"a": "\\x41"}',
        '{"a": "\u0001"}',
        "\u0000",
        '{"a"',
        "}",
      ];
      const msgs = new Set<string>();
      await everyCase(broken, async (body) => {
        const res = await t.call({ method: "POST", target: "/v1/partner/deposits", body });
        const [d] = assert422(res, [[["body"], "json_invalid"]], `broken ${JSON.stringify(body)}`);
        msgs.add(d!.msg);
      });
      assert.deepEqual(
        [...msgs],
        ["Request body is not a JSON document"],
        "one message of ours for every broken body",
      );
    });
  });

  test("invalid UTF-8 and escaped lone surrogates or NUL in JSON strings are a 422", async () => {
    await unchanged(t, async () => {
      // Invalid UTF-8 inside a string: a 422 for the body, never replaced by U+FFFD and taken.
      const valid = (refText: Buffer) =>
        Buffer.concat([
          Buffer.from(`{"partner_client_id":"${client}","asset_id":"AED","amount":"1","partner_order_ref":"`),
          refText,
          Buffer.from('"}'),
        ]);
      await everyCase(
        [
          ["lone continuation", Buffer.from([0x80])],
          ["invalid byte", Buffer.from([0xff, 0xfe])],
          ["overlong slash", Buffer.from([0xc0, 0xaf])],
          ["UTF-8 surrogate", Buffer.from([0xed, 0xa0, 0x80])],
          ["cut sequence", Buffer.from([0xe2, 0x82])],
          ["beyond U+10FFFF", Buffer.from([0xf4, 0x90, 0x80, 0x80])],
        ] as const,
        async ([what, bytes]) => {
          const res = await t.call({ method: "POST", target: "/v1/partner/deposits", body: valid(bytes) });
          const [d] = assert422(res, [[["body"], "utf8_invalid"]], what);
          assert.equal(d!.msg, "Request body is not valid UTF-8", what);
        },
      );
      // A lone surrogate written as a JSON escape: string_unicode at the field.
      assert422(
        await t.call({
          method: "POST",
          target: "/v1/partner/deposits",
          body: `{"partner_client_id":"${client}","asset_id":"AED","amount":"1","partner_order_ref":"\\ud800"}`,
        }),
        [[["body", "partner_order_ref"], "string_unicode"]],
        "escaped lone surrogate",
      );
      assert422(
        await t.call({
          method: "POST",
          target: "/v1/partner/deposits",
          body: `{"partner_client_id":"${client}","asset_id":"AED","amount":"1","partner_order_ref":"a\\u0000b"}`,
        }),
        [[["body", "partner_order_ref"], "string_nul"]],
        "escaped NUL",
      );
    });
  });

  test("headers: over 16 KiB is a 431 in our shape; many small headers are served; the process stays up", async () => {
    await unchanged(t, async () => {
      const big = await t.call({
        method: "GET",
        target: "/v1/partner/asset-pairs",
        extraHeaders: [["X-Pad", "a".repeat(17 * 1024)]],
      });
      assertPlain(big, 431, "one 17 KiB header");
      const many: [string, string][] = Array.from({ length: 3_000 }, (_, i) => [`X-H${i}`, "aaaa"]);
      assertPlain(
        await t.call({ method: "GET", target: "/v1/partner/asset-pairs", extraHeaders: many }),
        431,
        "3 000 headers",
      );
      const deposit = await t.call({
        method: "POST",
        target: "/v1/partner/deposits",
        body: { partner_client_id: client, asset_id: "AED", amount: "1", partner_order_ref: ref() },
        extraHeaders: [["X-Pad", "a".repeat(17 * 1024)]],
      });
      assertPlain(deposit, 431, "a deposit with a 17 KiB header");
      // Under the limit, many headers: the request is served (a GET, so nothing changes).
      const fine: [string, string][] = Array.from({ length: 500 }, (_, i) => [`X-H${i}`, "a"]);
      const ok: RawResponse = await t.call({
        method: "GET",
        target: "/v1/partner/asset-pairs",
        extraHeaders: fine,
      });
      assert.equal(ok.status, 200, ok.text);
      // Malformed HTTP: our 400.
      assertPlain(
        await t.raw("GET /v1/partner/asset-pairs HTTP/1.1\r\nHost: x\r\nBad Header\r\n\r\n"),
        400,
        "header without colon",
      );
      assertPlain(
        await t.raw(
          "GET /v1/partner/asset-pairs HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n",
        ),
        400,
        "two lengths",
      );
      assertPlain(
        await t.raw(
          "POST /v1/partner/deposits HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
        ),
        400,
        "length and chunked",
      );
    });
  });
});
