// Reads authenticated by their own statement (db/credential-witness.ts, docs/decisions.md
// "Authentication in the read's statement"): a hot read that the credentials its process kept
// accept sends one statement, which carries the partner's row; a key retired, a partner disabled
// or an allow-list changed is still refused at once in every process, whatever the answer the read
// would have had (200, 404, 422, 429), and a budget the operator changed applies to the next read.

import assert from "node:assert/strict";
import { after, before, describe, mock, test } from "node:test";
import { generateKeyPair, signRequest } from "@counterpart/protocol";
import type { FastifyInstance } from "fastify";
import ipaddr from "ipaddr.js";
import { buildPartnerApp, witnessedRoutes } from "../app.ts";
import { type CredentialWitness, witnessColumn } from "../db/credential-witness.ts";
import { listPairsForPartner } from "../modules/catalog/catalog-store.ts";
import { listOrders } from "../modules/orders/orders-store.ts";
import { defaultRateLimits } from "../modules/partners/index.ts";
import { credentialsColumn, credentialsFromJson } from "../modules/partners/partners-store.ts";
import {
  type CountedProcess,
  type StatementCounter,
  startCountedProcess,
} from "../testing/counted-process.ts";
import { insertClient } from "../testing/fixtures.ts";
import { startTestContext, type TestContext, type TestPartner } from "../testing/harness.ts";
import { databaseState } from "../testing/money-state.ts";

describe("reads authenticated by their own statement", () => {
  let ctx: TestContext;
  /** A second process of the service on the same database, whose statements are counted. */
  let counted: CountedProcess;
  let second: FastifyInstance;
  let statements: StatementCounter;

  before(async () => {
    ctx = await startTestContext();
    counted = await startCountedProcess(ctx);
    second = counted.app;
    statements = counted.statements;
  });
  after(async () => {
    await counted.close();
    await ctx.close();
  });

  /** A signed GET on `app` by `partner`, a millisecond after the previous request. */
  function get(app: FastifyInstance, partner: TestPartner, url: string, key = partner.privateKeyPem) {
    ctx.clock.advance(1);
    const headers = signRequest({
      partnerId: partner.id,
      privateKey: key,
      method: "GET",
      target: url,
      body: "",
      nowMs: ctx.clock.nowMs(),
    });
    return app.inject({ method: "GET", url, headers, remoteAddress: "127.0.0.1" });
  }

  /** A partner with client-1 and one deposit: its order's id and reference. */
  async function partnerWithOrder(name: string) {
    const partner = await ctx.addPartner({ name });
    await insertClient(ctx.services.database.db, partner.id, 1);
    const ref = `witness-${name.replaceAll(/[^a-z]+/g, "-")}`;
    const res = await ctx.signed({
      method: "POST",
      url: "/v1/partner/deposits",
      partner,
      body: { partner_client_id: "client-1", asset_id: "AED", amount: "10", partner_order_ref: ref },
    });
    assert.equal(res.statusCode, 200, res.body);
    const orderId = (res.json() as { result: { id: number } }).result.id;
    return { partner, orderId, ref };
  }

  /** Every witnessed route, with the answer it gives an accepted request. */
  function witnessedReads(orderId: number, ref: string): [string, number][] {
    return [
      ["/v1/partner/balances?partner_client_id=client-1", 200],
      ["/v1/partner/balances/AED?partner_client_id=client-1", 200],
      ["/v1/partner/balances/NOPE?partner_client_id=client-1", 400],
      ["/v1/partner/balances?partner_client_id=nobody", 400],
      ["/v1/partner/balances", 422],
      ["/v1/partner/asset-pairs", 200],
      ["/v1/partner/asset-pairs/BTC-AED", 200],
      ["/v1/partner/asset-pairs/NOPE-NOPE", 404],
      [`/v1/partner/orders/${orderId}`, 200],
      ["/v1/partner/orders/999999999", 404],
      [`/v1/partner/orders/ref/${ref}`, 200],
      ["/v1/partner/orders/ref/nothing-by-that-ref", 404],
      ["/v1/partner/orders?page_size=5", 200],
      ["/v1/partner/orders?page_size=0", 422],
      ["/v1/partner/orders?partner_client_id=nobody", 400],
    ];
  }

  test("a read the kept credentials accept sends one statement: the read's own", async () => {
    const { partner, orderId, ref } = await partnerWithOrder("counted");
    const perRequest = async (url: string) => {
      statements.count = 0;
      const res = await get(second, partner, url);
      assert.equal(res.statusCode, 200, `${url}: ${res.body}`);
      return statements.count;
    };
    // The first request of this process reads the credentials with a statement of its own.
    assert.equal(await perRequest("/v1/partner/asset-pairs"), 2);
    for (const url of [
      "/v1/partner/asset-pairs",
      "/v1/partner/asset-pairs/BTC-AED",
      "/v1/partner/balances?partner_client_id=client-1",
      "/v1/partner/balances/AED?partner_client_id=client-1",
      `/v1/partner/orders/${orderId}`,
      `/v1/partner/orders/ref/${ref}`,
      // The page and its count, in one statement that returns a row even for an empty page.
      "/v1/partner/orders?page_size=5",
      "/v1/partner/orders?page=1000&page_size=5",
    ]) {
      assert.equal(await perRequest(url), 1, url);
    }
    // A read whose statement returns no row settles with a statement of its own.
    statements.count = 0;
    const absent = await get(second, partner, "/v1/partner/orders/999999999");
    assert.equal(absent.statusCode, 404);
    assert.equal(statements.count, 2);
    // A route that does not witness reads the credentials first, as before.
    assert.equal(await perRequest("/v1/partner/clients/client-1/"), 2);
  });

  test("a process parses a partner's allow-list once, not at every read", async () => {
    const { partner, orderId, ref } = await partnerWithOrder("parsed-once");
    let res = await ctx.adminRequest("PUT", `/admin/partners/${partner.id}/ips`, {
      allowed_ips: ["127.0.0.0/8", "::1/128", "192.0.2.7"],
    });
    assert.equal(res.statusCode, 200, res.body);
    const parses = [mock.method(ipaddr, "parse"), mock.method(ipaddr, "parseCIDR")];
    const parsed = () => parses.reduce((n, m) => n + m.mock.callCount(), 0);
    try {
      assert.equal((await get(second, partner, "/v1/partner/asset-pairs")).statusCode, 200);
      assert.ok(parsed() >= 3, `the list's three entries parsed when first read (${parsed()} calls)`);
      for (const m of parses) m.mock.resetCalls();
      for (let round = 0; round < 2; round++) {
        for (const [url, status] of witnessedReads(orderId, ref)) {
          assert.equal((await get(second, partner, url)).statusCode, status, url);
        }
      }
      assert.equal(parsed(), 0, "a read the kept credentials accept parses no address");
      // A new list is parsed, and judged, at the next read.
      res = await ctx.adminRequest("PUT", `/admin/partners/${partner.id}/ips`, {
        allowed_ips: ["192.0.2.7"],
      });
      assert.equal(res.statusCode, 200, res.body);
      assert.equal((await get(second, partner, "/v1/partner/asset-pairs")).statusCode, 401);
      assert.ok(parsed() >= 1, "the new list parsed");
    } finally {
      for (const m of parses) m.mock.restore();
    }
  });

  test("a process parses the credentials a read carries only when their text changed", async () => {
    const { partner, orderId, ref } = await partnerWithOrder("text-kept");
    const parse = mock.method(JSON, "parse");
    /** JSON.parse calls on this partner's credentials as a statement carried them. */
    const parsed = () =>
      parse.mock.calls.filter((c) => {
        const text = c.arguments[0];
        return typeof text === "string" && text.includes(partner.id) && text.includes("public_keys");
      }).length;
    try {
      // Kept by a statement of its own, then seen once as a witnessed read's text.
      for (let i = 0; i < 2; i++) {
        assert.equal((await get(second, partner, "/v1/partner/asset-pairs")).statusCode, 200);
      }
      parse.mock.resetCalls();
      for (let round = 0; round < 2; round++) {
        for (const [url, status] of witnessedReads(orderId, ref)) {
          assert.equal((await get(second, partner, url)).statusCode, status, url);
        }
      }
      assert.equal(parsed(), 0, "the same text again is judged without parsing it");
      // A changed budget is a new text: parsed at the next read, and applied by it.
      let res = await ctx.adminRequest("PUT", `/admin/partners/${partner.id}/limits`, { reads: 7 });
      assert.equal(res.statusCode, 200, res.body);
      const lowered = await get(second, partner, "/v1/partner/asset-pairs");
      assert.equal(lowered.statusCode, 200);
      assert.equal(lowered.headers["ratelimit-limit"], "7");
      assert.equal(parsed(), 1);
      const next = await get(second, partner, "/v1/partner/asset-pairs");
      assert.equal(next.headers["ratelimit-limit"], "7");
      assert.equal(parsed(), 1, "and then kept");
      // A partner disabled since: its text changed, and the read is refused.
      res = await ctx.adminRequest("PUT", `/admin/partners/${partner.id}/active`, {
        active: false,
        reason: "witness text test",
      });
      assert.equal(res.statusCode, 200, res.body);
      assert.equal((await get(second, partner, "/v1/partner/asset-pairs")).statusCode, 401);
      assert.equal(parsed(), 2);
    } finally {
      parse.mock.restore();
    }
  });

  test("a witnessed read changes nothing, accepted or refused by the row after its handler ran", async () => {
    const { partner, orderId, ref } = await partnerWithOrder("changes-nothing");
    const reads = witnessedReads(orderId, ref);
    // Every route the app serves as witnessed is among the reads this suite makes.
    const paths = reads.map(([url]) => new URL(url, "http://127.0.0.1").pathname);
    const routes = witnessedRoutes(second);
    assert.ok(routes.length >= 7, routes.join(" "));
    for (const route of routes) {
      const pattern = new RegExp(`^${route.replaceAll(/:[^/]+/g, "[^/]+")}$`);
      assert.ok(
        paths.some((p) => pattern.test(p)),
        `${route}: witnessed, and not among this suite's reads`,
      );
    }
    const db = ctx.services.database.db;
    let before = await databaseState(db);
    for (const [url, status] of reads) {
      assert.equal((await get(second, partner, url)).statusCode, status, url);
    }
    assert.equal(await databaseState(db), before, "accepted reads changed the database");
    // Each route once more, under a key the row no longer holds but the process still accepts: its
    // handler runs, and only its answer is withheld.
    let key = partner.privateKeyPem;
    for (const [url] of reads) {
      assert.equal((await get(second, partner, "/v1/partner/asset-pairs", key)).statusCode, 200);
      const next = generateKeyPair();
      const res = await ctx.adminRequest("PUT", `/admin/partners/${partner.id}/key`, {
        public_key_pem: next.publicKeyPem,
      });
      assert.equal(res.statusCode, 200, res.body);
      before = await databaseState(db);
      assert.equal((await get(second, partner, url, key)).statusCode, 401, url);
      assert.equal(await databaseState(db), before, `${url}: a refused read changed the database`);
      key = next.privateKeyPem;
    }
  });

  test("a route that could act before its authentication is confirmed is refused when the app is built", async () => {
    const app = buildPartnerApp(ctx.services, { logger: false });
    try {
      const handler = async () => ({});
      assert.throws(
        () => app.post("/v1/partner/witnessed-write", { config: { witnessesCredentials: true } }, handler),
        /only a GET route may witness its credentials/,
      );
      assert.throws(
        () =>
          app.get(
            "/v1/partner/both",
            { config: { witnessesCredentials: true, recordsSignature: true } },
            handler,
          ),
        /only a GET route may witness its credentials/,
      );
      assert.throws(
        () => app.put("/v1/partner/recorded-put", { config: { recordsSignature: true } }, handler),
        /only a POST route may record its signature/,
      );
      // A new witnessed GET is listed, so the test above runs it unless it is among the reads.
      const added = "/v1/partner/witnessed-read/:id";
      app.get(added, { config: { witnessesCredentials: true } }, handler);
      assert.deepEqual(witnessedRoutes(app), [...witnessedRoutes(ctx.app), added]);
    } finally {
      await app.close();
    }
  });

  test("every witnessed read answers as it did, with its budget's fields, in every process", async () => {
    const { partner, orderId, ref } = await partnerWithOrder("same-answers");
    for (const [url, status] of witnessedReads(orderId, ref)) {
      const kept = await get(second, partner, url);
      const fresh = await get(ctx.app, partner, url);
      assert.equal(kept.statusCode, status, `${url}: ${kept.body}`);
      assert.equal(fresh.statusCode, status, `${url}: ${fresh.body}`);
      assert.deepEqual(kept.json(), fresh.json(), url);
      assert.equal(kept.headers["ratelimit-limit"], String(defaultRateLimits.reads), url);
    }
  });

  const changes: { name: string; apply: (p: TestPartner) => Promise<{ key?: string }> }[] = [
    {
      name: "its key retired (replaced by another)",
      apply: async (p) => {
        const next = generateKeyPair();
        const res = await ctx.adminRequest("PUT", `/admin/partners/${p.id}/key`, {
          public_key_pem: next.publicKeyPem,
        });
        assert.equal(res.statusCode, 200, res.body);
        return {};
      },
    },
    {
      name: "the partner disabled",
      apply: async (p) => {
        const res = await ctx.adminRequest("PUT", `/admin/partners/${p.id}/active`, {
          active: false,
          reason: "witness test",
        });
        assert.equal(res.statusCode, 200, res.body);
        return {};
      },
    },
    {
      name: "an allow-list without the caller",
      apply: async (p) => {
        const res = await ctx.adminRequest("PUT", `/admin/partners/${p.id}/ips`, {
          allowed_ips: ["192.0.2.1/32"],
        });
        assert.equal(res.statusCode, 200, res.body);
        return {};
      },
    },
  ];

  for (const change of changes) {
    test(`${change.name}: every witnessed read is a 401 at once in a process that kept the credentials`, async () => {
      const { partner, orderId, ref } = await partnerWithOrder(change.name);
      // The second process keeps the credentials that accept the partner.
      assert.equal((await get(second, partner, "/v1/partner/asset-pairs")).statusCode, 200);
      await change.apply(partner);
      for (const [url] of witnessedReads(orderId, ref)) {
        const res = await get(second, partner, url);
        assert.equal(res.statusCode, 401, `${url}: ${res.body}`);
        assert.deepEqual(res.json(), { code: 401, msg: "Unauthorized", msg_detail: null }, url);
        assert.equal(res.headers["ratelimit-limit"], undefined, url);
        assert.equal(res.headers["retry-after"], undefined, url);
      }
    });
  }

  test("over the kept budget: a 401 when the row refuses, not a 429", async () => {
    const { partner } = await partnerWithOrder("budget-refused");
    let res = await ctx.adminRequest("PUT", `/admin/partners/${partner.id}/limits`, { reads: 1 });
    assert.equal(res.statusCode, 200, res.body);
    ctx.clock.advance(60_000);
    assert.equal((await get(second, partner, "/v1/partner/asset-pairs")).statusCode, 200);
    assert.equal((await get(second, partner, "/v1/partner/asset-pairs")).statusCode, 429);
    res = await ctx.adminRequest("PUT", `/admin/partners/${partner.id}/active`, {
      active: false,
      reason: "witness test",
    });
    assert.equal(res.statusCode, 200, res.body);
    const refused = await get(second, partner, "/v1/partner/asset-pairs");
    assert.equal(refused.statusCode, 401);
    assert.equal(refused.headers["retry-after"], undefined);
  });

  test("a budget the operator changes applies to the next read of a process that kept the old one", async () => {
    const { partner } = await partnerWithOrder("budget-changed");
    const setReads = async (reads: number | null) => {
      const res = await ctx.adminRequest("PUT", `/admin/partners/${partner.id}/limits`, { reads });
      assert.equal(res.statusCode, 200, res.body);
    };
    ctx.clock.advance(60_000);
    const first = await get(second, partner, "/v1/partner/asset-pairs");
    assert.equal(first.headers["ratelimit-limit"], String(defaultRateLimits.reads));
    // Lowered: the next read is counted in the new budget, and the one after it is over.
    await setReads(2);
    const lowered = await get(second, partner, "/v1/partner/asset-pairs");
    assert.equal(lowered.statusCode, 200);
    assert.equal(lowered.headers["ratelimit-limit"], "2");
    assert.equal(lowered.headers["ratelimit-remaining"], "1");
    assert.equal((await get(second, partner, "/v1/partner/asset-pairs")).statusCode, 200);
    const over = await get(second, partner, "/v1/partner/asset-pairs");
    assert.equal(over.statusCode, 429);
    assert.deepEqual(over.json(), { code: 429, msg: "Too Many Requests", msg_detail: null });
    assert.equal(over.headers["retry-after"], "30");
    // Lowered again while this process still holds 2: the next read is over the new budget of 1
    // only if that one is spent, which it is not: a new budget starts full.
    await setReads(1);
    const again = await get(second, partner, "/v1/partner/asset-pairs");
    assert.equal(again.statusCode, 200);
    assert.equal(again.headers["ratelimit-limit"], "1");
    assert.equal(again.headers["ratelimit-remaining"], "0");
    const overAgain = await get(second, partner, "/v1/partner/asset-pairs");
    assert.equal(overAgain.statusCode, 429);
    assert.equal(overAgain.headers["ratelimit-limit"], "1");
    // Restored while this process holds a spent budget of 1: the read goes through.
    await setReads(null);
    const restored = await get(second, partner, "/v1/partner/asset-pairs");
    assert.equal(restored.statusCode, 200);
    assert.equal(restored.headers["ratelimit-limit"], String(defaultRateLimits.reads));
  });

  test("the asset pairs carry the credentials on their first row only", async () => {
    const { partner } = await partnerWithOrder("pairs-rows");
    const seen: unknown[] = [];
    const witness: CredentialWitness = {
      partnerId: partner.id,
      column: credentialsColumn,
      observe: (v) => seen.push(v),
    };
    const rows = await listPairsForPartner(ctx.services.database.db, partner.id, witness);
    assert.ok(rows.length > 1, `${rows.length} pairs`);
    const carried = rows.map((r) => (r as unknown as Record<string, unknown>)[witnessColumn]);
    assert.equal(typeof carried[0], "string");
    assert.deepEqual(
      carried.slice(1),
      carried.slice(1).map(() => null),
    );
    assert.deepEqual(
      seen.map((v) => credentialsFromJson(v)?.id),
      [partner.id],
    );
  });

  test("a page of orders carries the credentials on its first row only, and on an empty page's row", async () => {
    const { partner } = await partnerWithOrder("page-rows");
    for (const n of [2, 3]) {
      const res = await ctx.signed({
        method: "POST",
        url: "/v1/partner/deposits",
        partner,
        body: {
          partner_client_id: "client-1",
          asset_id: "AED",
          amount: "1",
          partner_order_ref: `page-rows-${n}`,
        },
      });
      assert.equal(res.statusCode, 200, res.body);
    }
    const seen: unknown[] = [];
    const witness: CredentialWitness = {
      partnerId: partner.id,
      column: credentialsColumn,
      observe: (v) => seen.push(v),
    };
    const filter = { clientId: null, sources: [], statuses: [], from: null, to: null };
    const db = ctx.services.database.db;

    const page = await listOrders(db, partner.id, filter, 1, 10, witness);
    assert.equal(page.total, 3);
    assert.equal(page.rows.length, 3);
    const carried = page.rows.map((r) => (r as unknown as Record<string, unknown>)[witnessColumn]);
    assert.equal(typeof carried[0], "string");
    assert.deepEqual(carried.slice(1), [null, null]);
    assert.equal(credentialsFromJson(seen[0])?.id, partner.id);

    const beyond = await listOrders(db, partner.id, filter, 5, 10, witness);
    assert.deepEqual([beyond.total, beyond.rows.length], [3, 0]);
    assert.equal(credentialsFromJson(seen[1])?.id, partner.id);
  });
});
