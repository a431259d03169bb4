// Spec §5 and DESIGN "Authentication"/"Hardening": every trigger of a 401 gives the identical
// answer, the canonical path is the raw target with sorted query pieces, replays are refused.

import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { generateKeyPair, signRequest } from "@counterpart/protocol";
import type { LightMyRequestResponse } from "fastify";
import { startTestContext, type TestContext } from "../testing/harness.ts";

const unauthorizedBody = '{"code":401,"msg":"Unauthorized","msg_detail":null}';

function assertUnauthorized(res: LightMyRequestResponse, why: string): void {
  assert.equal(res.statusCode, 401, `${why}: status`);
  assert.equal(res.body, unauthorizedBody, `${why}: body`);
  const { "x-request-id": _id, date: _date, ...rest } = res.headers;
  assert.deepEqual(
    rest,
    {
      "content-type": "application/json; charset=utf-8",
      "content-length": String(unauthorizedBody.length),
      connection: "keep-alive",
    },
    `${why}: headers`,
  );
}

describe("signature authentication", () => {
  let ctx: TestContext;
  before(async () => {
    ctx = await startTestContext();
  });
  after(async () => {
    await ctx.close();
  });

  const url = "/v1/partner/asset-pairs";

  function headers(over: Partial<Record<string, string>> = {}, nowMs?: number) {
    const sig = signRequest({
      partnerId: ctx.partner.id,
      privateKey: ctx.partner.privateKeyPem,
      method: "GET",
      target: url,
      nowMs: nowMs ?? ctx.clock.nowMs(),
    });
    return { ...sig, ...over } as Record<string, string>;
  }

  /** One signed POST to an unrouted path; each call sends it again, with the same signature. */
  function replayable(
    signer: { id: string; privateKeyPem: string },
    payload: object,
    remoteAddress?: string,
  ) {
    const body = JSON.stringify(payload);
    const sig = signRequest({
      partnerId: signer.id,
      privateKey: signer.privateKeyPem,
      method: "POST",
      target: "/v1/partner/nothing-here",
      body,
      nowMs: ctx.clock.nowMs(),
    });
    return () =>
      ctx.app.inject({
        method: "POST",
        url: "/v1/partner/nothing-here",
        headers: { ...sig, "content-type": "application/json" },
        payload: body,
        ...(remoteAddress === undefined ? {} : { remoteAddress }),
      });
  }

  test("a correctly signed request is accepted", async () => {
    const res = await ctx.signed({ method: "GET", url });
    assert.equal(res.statusCode, 200);
    assert.ok(Array.isArray(res.json().items));
  });

  test("public endpoints need no signature and ignore signature headers", async () => {
    const plain = await ctx.app.inject({ method: "GET", url: "/v1/public/assets" });
    assert.equal(plain.statusCode, 200);
    const junk = await ctx.app.inject({
      method: "GET",
      url: "/v1/public/assets",
      headers: { "x-partner-id": "nope", "x-signature": "!!", "x-timestamp": "1" },
    });
    assert.equal(junk.statusCode, 200);
    assert.equal(junk.body, plain.body);
  });

  test("each missing header is a 401", async () => {
    for (const name of ["X-Partner-ID", "X-Timestamp", "X-Signature"]) {
      const h = headers();
      delete h[name];
      assertUnauthorized(await ctx.app.inject({ method: "GET", url, headers: h }), `missing ${name}`);
    }
  });

  test("malformed partner id, timestamp and signature encodings are a 401", async () => {
    const good = headers();
    const sig = good["X-Signature"]!;
    const cases: [string, Record<string, string>][] = [
      ["non-uuid partner", { "X-Partner-ID": "partner-1" }],
      ["12-digit timestamp", { "X-Timestamp": good["X-Timestamp"]!.slice(1) }],
      ["timestamp in seconds", { "X-Timestamp": String(Math.floor(ctx.clock.nowMs() / 1000)) }],
      ["signed timestamp", { "X-Timestamp": `+${good["X-Timestamp"]!.slice(1)}` }],
      ["url-safe base64", { "X-Signature": sig.replace(/\+/g, "-").replace(/\//g, "_") }],
      ["unpadded base64", { "X-Signature": sig.replace(/=+$/, "") }],
      ["trailing junk", { "X-Signature": `${sig}AA` }],
      ["whitespace", { "X-Signature": ` ${sig}` }],
      ["empty signature", { "X-Signature": "" }],
    ];
    for (const [why, over] of cases) {
      if (why === "url-safe base64" && !/[+/]/.test(sig)) continue;
      assertUnauthorized(await ctx.app.inject({ method: "GET", url, headers: { ...good, ...over } }), why);
    }
  });

  test("timestamp window: now and 60 s old pass; 60.001 s old or 1 ms ahead fail", async () => {
    const now = ctx.clock.nowMs();
    assert.equal((await ctx.app.inject({ method: "GET", url, headers: headers({}, now) })).statusCode, 200);
    assert.equal(
      (await ctx.app.inject({ method: "GET", url, headers: headers({}, now - 60_000) })).statusCode,
      200,
    );
    assertUnauthorized(
      await ctx.app.inject({ method: "GET", url, headers: headers({}, now - 60_001) }),
      "stale",
    );
    assertUnauthorized(await ctx.app.inject({ method: "GET", url, headers: headers({}, now + 1) }), "future");
  });

  test("unknown partner, inactive partner, partner without key, wrong key: 401", async () => {
    const unknown = headers({ "X-Partner-ID": "2b1f4a48-7a0f-4a57-9b58-3f2f0f6c9d11" });
    assertUnauthorized(await ctx.app.inject({ method: "GET", url, headers: unknown }), "unknown partner");

    const other = await ctx.addPartner();
    const res = await ctx.signed({ method: "GET", url, partner: other });
    assert.equal(res.statusCode, 200);
    await ctx.services.partners.setActive(other.id, false);
    assertUnauthorized(await ctx.signed({ method: "GET", url, partner: other }), "inactive partner");
    await ctx.services.partners.setActive(other.id, true);

    const keyless = await ctx.services.partners.create({
      name: "No key",
      publicKeyPem: null,
      allowIps: ["127.0.0.1"],
    });
    assert.ok(keyless.ok);
    const stranger = generateKeyPair();
    const sig = signRequest({
      partnerId: keyless.partner.id,
      privateKey: stranger.privateKeyPem,
      method: "GET",
      target: url,
      nowMs: ctx.clock.nowMs(),
    });
    assertUnauthorized(await ctx.app.inject({ method: "GET", url, headers: sig }), "partner without key");

    const wrongKey = signRequest({
      partnerId: ctx.partner.id,
      privateKey: stranger.privateKeyPem,
      method: "GET",
      target: url,
      nowMs: ctx.clock.nowMs(),
    });
    assertUnauthorized(await ctx.app.inject({ method: "GET", url, headers: wrongKey }), "wrong key");
  });

  test("IP allow-list: CIDR v4 and v6, IPv4-mapped addresses, empty list admits nobody", async () => {
    const p = await ctx.addPartner({ allowIps: ["10.1.0.0/16", "2001:db8::/32"] });
    assert.equal(
      (await ctx.signed({ method: "GET", url, partner: p, remoteAddress: "10.1.200.3" })).statusCode,
      200,
    );
    assert.equal(
      (await ctx.signed({ method: "GET", url, partner: p, remoteAddress: "::ffff:10.1.0.9" })).statusCode,
      200,
    );
    assert.equal(
      (await ctx.signed({ method: "GET", url, partner: p, remoteAddress: "2001:db8::42" })).statusCode,
      200,
    );
    assertUnauthorized(
      await ctx.signed({ method: "GET", url, partner: p, remoteAddress: "10.2.0.1" }),
      "outside v4",
    );
    assertUnauthorized(
      await ctx.signed({ method: "GET", url, partner: p, remoteAddress: "2001:db9::1" }),
      "outside v6",
    );
    await ctx.services.partners.setIps(p.id, []);
    assertUnauthorized(
      await ctx.signed({ method: "GET", url, partner: p, remoteAddress: "10.1.0.1" }),
      "empty list",
    );
  });

  test("X-Forwarded-For is ignored unless the peer is a trusted proxy", async () => {
    const p = await ctx.addPartner({ allowIps: ["203.0.113.7/32"] });
    const spoof = await ctx.signed({
      method: "GET",
      url,
      partner: p,
      remoteAddress: "127.0.0.1",
      headers: { "x-forwarded-for": "203.0.113.7" },
    });
    assertUnauthorized(spoof, "untrusted forwarded-for");

    const proxied = await startTestContext({ env: { TRUST_PROXY: "127.0.0.1/32" } });
    try {
      const q = await proxied.addPartner({ allowIps: ["203.0.113.7/32"] });
      const ok = await proxied.signed({
        method: "GET",
        url,
        partner: q,
        remoteAddress: "127.0.0.1",
        headers: { "x-forwarded-for": "203.0.113.7" },
      });
      assert.equal(ok.statusCode, 200);
      const direct = await proxied.signed({
        method: "GET",
        url,
        partner: q,
        remoteAddress: "198.51.100.1",
        headers: { "x-forwarded-for": "203.0.113.7" },
      });
      assertUnauthorized(direct, "forwarded-for from an untrusted peer");
    } finally {
      await proxied.close();
    }
  });

  test("the signature covers timestamp, method, path, query and every body byte", async () => {
    const body = '{"a": 1}';
    const sig = signRequest({
      partnerId: ctx.partner.id,
      privateKey: ctx.partner.privateKeyPem,
      method: "POST",
      target: "/v1/partner/quotes",
      body,
      nowMs: ctx.clock.nowMs(),
    });
    const send = (o: { url?: string; method?: "POST" | "PUT"; payload?: string; ts?: string }) =>
      ctx.app.inject({
        method: o.method ?? "POST",
        url: o.url ?? "/v1/partner/quotes",
        headers: { ...sig, ...(o.ts ? { "X-Timestamp": o.ts } : {}), "content-type": "application/json" },
        payload: o.payload ?? body,
      });
    assertUnauthorized(await send({ payload: '{"a":1}' }), "re-serialised body");
    assertUnauthorized(await send({ method: "PUT" }), "other method");
    assertUnauthorized(await send({ url: "/v1/partner/Quotes" }), "path case");
    assertUnauthorized(await send({ url: "/v1/partner/quotes/" }), "trailing slash");
    assertUnauthorized(await send({ ts: String(ctx.clock.nowMs() - 1) }), "other timestamp");
    // Accepted as signed: it reaches routing (no quotes route yet → 404, or a later 422).
    const res = await send({});
    assert.notEqual(res.statusCode, 401);
  });

  test("query pieces are sorted by name for the canonical path; the request is sent as-is", async () => {
    const target = "/v1/partner/asset-pairs?b=2&a=1&b=1";
    const sig = signRequest({
      partnerId: ctx.partner.id,
      privateKey: ctx.partner.privateKeyPem,
      method: "GET",
      target,
      nowMs: ctx.clock.nowMs(),
    });
    assert.equal((await ctx.app.inject({ method: "GET", url: target, headers: sig })).statusCode, 200);
    // The same pieces in another order canonicalise identically (stable sort keeps b=2 before b=1).
    const reordered = await ctx.app.inject({
      method: "GET",
      url: "/v1/partner/asset-pairs?a=1&b=2&b=1",
      headers: sig,
    });
    assert.equal(reordered.statusCode, 200);
    const swapped = await ctx.app.inject({
      method: "GET",
      url: "/v1/partner/asset-pairs?a=1&b=1&b=2",
      headers: sig,
    });
    assertUnauthorized(swapped, "equal names in another order");
  });

  test("a replayed POST inside the window is a 401 whatever its first outcome; identical GETs are not", async () => {
    const send = replayable(ctx.partner, { x: 1 });
    const first = await send();
    assert.equal(first.statusCode, 404);
    assertUnauthorized(await send(), "replay");
    const g = headers();
    assert.equal((await ctx.app.inject({ method: "GET", url, headers: g })).statusCode, 200);
    assert.equal((await ctx.app.inject({ method: "GET", url, headers: g })).statusCode, 200);
  });

  test("a disable, a new key or a new allow-list holds from the next POST, though the process keeps credentials", async () => {
    // The changes go through the partners service, which tells the app's authenticator nothing:
    // what holds here holds for another process's authenticator too.
    const p = await ctx.addPartner({ allowIps: ["127.0.0.1/32", "10.9.0.0/16"] });
    const post = (
      signer: { id: string; privateKeyPem: string; publicKeyPem: string },
      remoteAddress?: string,
    ) =>
      ctx.signed({
        method: "POST",
        url: "/v1/partner/nothing-here",
        body: { n: 1 },
        partner: signer,
        ...(remoteAddress === undefined ? {} : { remoteAddress }),
      });
    const recorded = async () =>
      Number(
        (
          await ctx.services.database.db
            .selectFrom("used_signatures")
            .select((eb) => eb.fn.countAll().as("n"))
            .where("partner_id", "=", p.id)
            .executeTakeFirstOrThrow()
        ).n,
      );
    // Accepted by authentication: the unknown route answers 404, and the signature is recorded.
    assert.equal((await post(p)).statusCode, 404);
    assert.equal((await post(p)).statusCode, 404);
    assert.equal(await recorded(), 2);

    await ctx.services.partners.setActive(p.id, false);
    assertUnauthorized(await post(p), "disabled since the last request");
    assert.equal(await recorded(), 2, "a refused request records nothing");
    await ctx.services.partners.setActive(p.id, true);
    assert.equal((await post(p)).statusCode, 404, "enabled again");
    assert.equal(await recorded(), 3);

    const next = generateKeyPair();
    const rotated = { ...p, privateKeyPem: next.privateKeyPem, publicKeyPem: next.publicKeyPem };
    assert.ok((await ctx.services.partners.setKey(p.id, next.publicKeyPem)).ok);
    assert.equal((await post(rotated)).statusCode, 404, "the new key, first request after the change");
    assertUnauthorized(await post(p), "the old key");
    assert.equal((await post(rotated)).statusCode, 404, "the new key again");
    assert.equal(await recorded(), 5);

    assert.ok((await ctx.services.partners.setIps(p.id, ["10.9.0.0/16"])).ok);
    assertUnauthorized(await post(rotated, "127.0.0.1"), "an address no longer listed");
    assert.equal((await post(rotated, "10.9.1.1")).statusCode, 404, "an address still listed");
    assert.equal(await recorded(), 6);

    // A key changed back and forth between two requests, and a replay after the change.
    assert.ok((await ctx.services.partners.setKey(p.id, p.publicKeyPem)).ok);
    assertUnauthorized(await post(rotated, "10.9.1.1"), "the key replaced");
    const send = replayable(p, { n: 2 }, "10.9.1.1");
    assert.equal((await send()).statusCode, 404);
    assertUnauthorized(await send(), "replay");
    assert.equal(await recorded(), 7);
  });

  test("duplicate auth headers are a 401", async () => {
    const h = headers();
    const res = await ctx.app.inject({
      method: "GET",
      url,
      headers: { ...h, "X-Partner-ID": [h["X-Partner-ID"]!, h["X-Partner-ID"]!] as unknown as string },
    });
    assertUnauthorized(res, "duplicate partner header");
  });

  test("unknown partner routes answer 401 unsigned and 404 signed; wrong method 405 signed", async () => {
    assertUnauthorized(
      await ctx.app.inject({ method: "GET", url: "/v1/partner/nope" }),
      "unsigned unknown route",
    );
    const signed404 = await ctx.signed({ method: "GET", url: "/v1/partner/nope" });
    assert.equal(signed404.statusCode, 404);
    assert.deepEqual(signed404.json(), { code: 404, msg: "Not Found", msg_detail: null });
    assertUnauthorized(await ctx.app.inject({ method: "DELETE", url }), "unsigned 405");
    const signed405 = await ctx.signed({ method: "DELETE", url });
    assert.equal(signed405.statusCode, 405);
    assert.deepEqual(signed405.json(), { code: 405, msg: "Method Not Allowed", msg_detail: null });
  });
});
