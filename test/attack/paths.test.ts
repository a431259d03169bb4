// Attack suite: the path and query a signature covers (docs/decisions.md "Authentication": the
// canonical path is the raw target as received, the query sorted by name). A target that only
// decodes or normalises to a route is not that route: signed as sent, it is a 404; signed for one
// spelling and sent as another, it is a 401. Nothing is served under a spelling it was not signed
// for, and nothing changes.

import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import {
  assert422,
  assertAlive,
  assertPlain,
  everyCase,
  httpRequest,
  startTarget,
  type Target,
  unchanged,
} from "./target.ts";

const timeout = 240_000;

describe("attack: path and query canonicalisation", { timeout }, () => {
  let t: Target;
  let client: string;

  before(async () => {
    t = await startTarget();
    client = (await t.createClient(t.a, 1)).partnerClientId;
    const d = await t.deposit(t.a, client, "100", "paths-1");
    assert.equal(d.status, 200, d.text);
  });
  after(async () => {
    if (t !== undefined) {
      assertAlive(t);
      await t.close();
    }
  });

  test("targets that only decode or normalise to a route are refused when signed as sent: 401 or 404", async () => {
    // docs/decisions.md "Hardening": percent-encoding in a static segment, a "#", a "." or ".."
    // parameter is a 401 (the signed path is not the path routed); a path that matches no route is
    // a 404 whatever it holds; a NUL inside a parameter names nothing, a 404 too.
    const cases: [string, 401 | 404][] = [
      ["/v1/partner/asset-pair%73", 401],
      ["/v1/partner/%61sset-pairs", 401],
      ["/v1/partner/asset-pairs#x", 401],
      ["/v1/partner/asset-pairs/.", 401],
      ["/v1/partner/asset-pairs/..", 401],
      ["/v1/partner/asset-pairs/%2E%2E", 401],
      [`/v1/partner/clients/${client}/%2E`, 404],
      ["/v1/partner/asset-pairs%2F", 404],
      ["/v1/partner/asset-pairs%00", 404],
      ["/v1/partner//asset-pairs", 404],
      ["/v1/partner/./asset-pairs", 404],
      ["/v1/partner/x/../asset-pairs", 404],
      ["/v1/partner/asset-pairs;x", 404],
      ["/v1/partner/Asset-Pairs", 404],
      ["/v1/partner/ASSET-PAIRS", 404],
      ["/v1/partner/asset-pairs/btc-aed", 404],
      [`/v1/partner/clients/${client}`, 404],
      [`/v1/partner/clients/${client}//`, 404],
      ["/v1/partner/orders/01", 404],
      ["/v1/partner/orders/+1", 404],
      ["/v1/partner/orders/1.0", 404],
      ["/v1/partner/orders/0x1", 404],
      ["/v1/partner/asset-pairs/BTC-AED%00", 404],
      ["/v1/partner/orders/1%00", 404],
    ];
    await unchanged(t, async () => {
      await everyCase(cases, async ([target, expected]) => {
        assertPlain(await t.call({ method: "GET", target }), expected, target);
      });
      // A POST through an encoded static segment does not reach the deposit route either.
      assertPlain(
        await t.call({
          method: "POST",
          target: "/v1/partner/deposit%73",
          body: { partner_client_id: client, asset_id: "AED", amount: "1", partner_order_ref: "paths-x1" },
        }),
        401,
        "POST deposit%73",
      );
    });
    // Percent-encoding inside a parameter is the parameter (the only way to name an id holding
    // "/" or "%"), and the signature covers the form sent: served, as documented.
    const encoded = await t.call({ method: "GET", target: "/v1/partner/asset-pairs/BTC%2DAED" });
    assert.equal(encoded.status, 200, encoded.text);
    assert.equal((encoded.json as { result: { id: string } }).result.id, "BTC-AED");
  });

  test("a signature for one spelling of a path does not hold for another: 401", async () => {
    await unchanged(t, async () => {
      for (const [sent, signed] of [
        ["/v1/partner/asset-pair%73", "/v1/partner/asset-pairs"],
        ["/v1/partner/asset-pairs", "/v1/partner/asset-pair%73"],
        ["/v1/partner/asset-pairs/BTC%2DAED", "/v1/partner/asset-pairs/BTC-AED"],
        ["/v1/partner//asset-pairs", "/v1/partner/asset-pairs"],
        ["/v1/partner/./asset-pairs", "/v1/partner/asset-pairs"],
        ["/v1/partner/ASSET-PAIRS", "/v1/partner/asset-pairs"],
        ["/v1/partner/asset-pairs#x", "/v1/partner/asset-pairs"],
        ["/v1/partner/asset-pairs%00", "/v1/partner/asset-pairs"],
        ["/v1/partner/orders?page=1%26page_size%3D5", "/v1/partner/orders?page=1&page_size=5"],
        ["/v1/partner/orders?page=1&page_size=5", "/v1/partner/orders?page=1%26page_size%3D5"],
        ["/v1/partner/orders?Page=1", "/v1/partner/orders?page=1"],
      ] as const) {
        assertPlain(
          await t.call({ method: "GET", target: sent, signedPath: signed }),
          401,
          `${sent} signed as ${signed}`,
        );
      }
      const deposit = {
        method: "POST",
        body: { partner_client_id: client, asset_id: "AED", amount: "1", partner_order_ref: "paths-x2" },
      };
      assertPlain(
        await t.call({ ...deposit, target: "/v1/partner/deposit%73", signedPath: "/v1/partner/deposits" }),
        401,
        "deposit%73 signed as deposits",
      );
      assertPlain(
        await t.call({ ...deposit, target: "/v1/partner/deposits?", signedPath: "/v1/partner/deposits?x" }),
        401,
        "trailing ? signed with a query",
      );
    });
  });

  test("a path outside the partner space that normalises into it is not served", async () => {
    await unchanged(t, async () => {
      for (const target of [
        "/v1/public/../partner/asset-pairs",
        "/v1/public/..%2Fpartner/asset-pairs",
        "/v1/partner%2Fasset-pairs",
        "/V1/partner/asset-pairs",
        "/v1/Partner/asset-pairs",
        "//v1/partner/asset-pairs",
      ]) {
        // Unsigned: never the asset pairs.
        const res = await t.raw(httpRequest("GET", target, [], undefined, "localhost"));
        assert.ok(res.status === 404 || res.status === 401, `${target}: ${res.status} ${res.text}`);
        assertPlain(res, res.status as 401 | 404, `${target}, unsigned`);
        // Signed as sent: a 404.
        assertPlain(await t.call({ method: "GET", target }), 404, `${target}, signed`);
      }
    });
  });

  test("an absolute-form target is a 401 whatever path was signed", async () => {
    await unchanged(t, async () => {
      const { host, port } = t.address();
      for (const target of [
        `http://${host}:${port}/v1/partner/asset-pairs`,
        `http://evil.example/v1/partner/asset-pairs`,
        `HTTP://${host}:${port}/v1/partner/asset-pairs`,
      ]) {
        for (const signedPath of ["/v1/partner/asset-pairs", target]) {
          assertPlain(
            await t.call({ method: "GET", target, signedPath }),
            401,
            `${target} signed as ${signedPath}`,
          );
        }
      }
      const body = { partner_client_id: client, asset_id: "AED", amount: "1", partner_order_ref: "paths-x3" };
      assertPlain(
        await t.call({
          method: "POST",
          target: `http://${host}:${port}/v1/partner/deposits`,
          signedPath: "/v1/partner/deposits",
          body,
        }),
        401,
        "absolute-form deposit",
      );
    });
  });

  test("queries: a trailing ? is the path alone; pieces are signed sorted by name; equal names keep their order", async () => {
    await unchanged(t, async () => {
      // A trailing "?" or "&": the same request as without it, signed either way.
      for (const sent of [
        "/v1/partner/asset-pairs?",
        "/v1/partner/asset-pairs?&",
        "/v1/partner/asset-pairs?&&",
      ]) {
        const res = await t.call({ method: "GET", target: sent, signedPath: "/v1/partner/asset-pairs" });
        assert.equal(res.status, 200, `${sent}: ${res.text}`);
      }
      // The "?" is not part of the canonical path: a signature over it literally does not hold.
      assertPlain(
        await t.call({
          method: "GET",
          target: "/v1/partner/asset-pairs?",
          signedPath: "/v1/partner/asset-pairs?",
        }),
        401,
        "a literal trailing ? signed",
      );
      // Sent in any order, signed sorted by name.
      const list = "/v1/partner/orders?page_size=5&page=1&partner_client_id=client-1";
      const sorted = await t.call({
        method: "GET",
        target: list,
        signedPath: "/v1/partner/orders?page=1&page_size=5&partner_client_id=client-1",
      });
      assert.equal(sorted.status, 200, sorted.text);
      assert.equal((sorted.json as { total: number }).total, 1);
      // Signed in the order sent (not sorted): a 401.
      assertPlain(await t.call({ method: "GET", target: list, signedPath: list }), 401, "unsorted signature");
      // Equal names keep their order: a signature over status=a&status=b does not cover b then a.
      assertPlain(
        await t.call({
          method: "GET",
          target: "/v1/partner/orders?status=failed&status=completed",
          signedPath: "/v1/partner/orders?status=completed&status=failed",
        }),
        401,
        "repeated names reordered",
      );
      const both = await t.call({
        method: "GET",
        target: "/v1/partner/orders?status=failed&status=completed",
      });
      assert.equal(both.status, 200, both.text);
      assert.equal((both.json as { total: number }).total, 1);
      // A name given twice where one value is expected: a 422 at that name.
      assert422(await t.call({ method: "GET", target: "/v1/partner/orders?page=1&page=2" }), [
        [["query", "page"], "int_parsing"],
      ]);
      // Encoded "=" and "&" stay inside the value: one client id "client-1&page=2", unknown.
      const encoded = await t.call({
        method: "GET",
        target: "/v1/partner/balances?partner_client_id=client-1%26page%3D2",
      });
      assert.equal(encoded.status, 400, encoded.text);
      assert.deepEqual(encoded.json, { code: 2008, msg: "Invalid client ID", msg_detail: null });
      // Loose integers are not integers.
      await everyCase(
        [
          ["page", "1e3"],
          ["page", "0x10"],
          ["page", "1_0"],
          ["page", ""],
          ["page_size", "0x10"],
          ["page_size", "1e1"],
          ["page_size", "Infinity"],
          ["page_size", "NaN"],
        ] as const,
        async ([name, value]) => {
          const res = await t.call({
            method: "GET",
            target: `/v1/partner/orders?${name}=${encodeURIComponent(value)}`,
          });
          assert422(res, [[["query", name], "int_parsing"]], `${name}=${value}`);
        },
      );
    });
  });

  test("methods: a known path with another method is a 405 when signed, and the signature covers the method", async () => {
    await unchanged(t, async () => {
      assertPlain(await t.call({ method: "DELETE", target: "/v1/partner/deposits" }), 405, "DELETE deposits");
      assertPlain(
        await t.call({ method: "PATCH", target: `/v1/partner/clients/${client}/`, body: { name: "X" } }),
        405,
        "PATCH client",
      );
      assertPlain(
        await t.call({ method: "DELETE", target: `/v1/partner/clients/${client}/`, signedMethod: "GET" }),
        401,
        "DELETE signed as GET",
      );
      // Method override headers change nothing.
      assertPlain(
        await t.call({
          method: "GET",
          target: "/v1/partner/deposits",
          extraHeaders: [
            ["X-HTTP-Method-Override", "POST"],
            ["X-HTTP-Method", "POST"],
          ],
        }),
        405,
        "method override",
      );
    });
  });
});
