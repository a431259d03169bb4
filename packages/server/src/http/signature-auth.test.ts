// docs/reference.md §5 and docs/decisions.md "Authentication"/"Hardening": every trigger of a 401 gives the identical
// answer, the canonical path is the raw target with sorted query pieces, replays are refused.

import assert from "node:assert/strict";
import crypto from "node:crypto";
import net, { type AddressInfo } from "node:net";
import { after, before, describe, test } from "node:test";
import { canonicalPath, canonicalString, generateKeyPair, signRequest } from "@counterpart/protocol";
import type { LightMyRequestResponse } from "fastify";
import { sql } from "kysely";
import { limits } from "../config/limits.ts";
import { clientPayload } from "../testing/fixtures.ts";
import { startTestContext, type TestContext, testNote } from "../testing/harness.ts";
import { type RawResponse, rawRequest } from "../testing/raw-http.ts";

/**
 * Signature headers over a target taken as it is, for targets signRequest refuses to sign (a
 * fragment, raw non-ASCII): what an attacker or a broken client could still send.
 */
function signAsSent(p: {
  partnerId: string;
  privateKey: string;
  method: string;
  target: string;
  nowMs: number;
}) {
  const timestamp = String(p.nowMs);
  const path = canonicalPath(p.target) ?? p.target;
  const canonical = canonicalString({ timestamp, method: p.method, path, body: "" });
  const signature = crypto.sign(null, Buffer.from(canonical, "utf8"), p.privateKey).toString("base64");
  return { "X-Partner-ID": p.partnerId, "X-Timestamp": timestamp, "X-Signature": signature };
}

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
    await ctx.services.partners.setActive(other.id, false, testNote);
    assertUnauthorized(await ctx.signed({ method: "GET", url, partner: other }), "inactive partner");
    await ctx.services.partners.setActive(other.id, true, testNote);

    const keyless = await ctx.services.partners.create(
      {
        name: "No key",
        publicKeyPem: null,
        allowIps: ["127.0.0.1"],
      },
      testNote,
    );
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
    await ctx.services.partners.setIps(p.id, [], testNote);
    assertUnauthorized(
      await ctx.signed({ method: "GET", url, partner: p, remoteAddress: "10.1.0.1" }),
      "empty list",
    );
  });

  test("an allow-list entry spelled other than in plain decimal is refused, and one stored before admits nobody", async () => {
    const p = await ctx.addPartner({ allowIps: ["10.1.0.0/16"] });
    // What inet_aton (and ipaddr.js) would read as another host than a reader sees: 127.0.0.010
    // is 127.0.0.8, 0177.0.0.1 is 127.0.0.1, 127.1 is 127.0.0.1, 0x7f000001 and 2130706433 too.
    for (const odd of [
      "127.0.0.010",
      "0177.0.0.1",
      "127.1",
      "127.0.8",
      "0x7f000001",
      "2130706433",
      "010.0.0.1/8",
      "10.0.0.0/08",
      "::ffff:127.0.0.010",
      "fe80::1%eth0",
    ]) {
      const refused = await ctx.services.partners.setIps(p.id, ["10.1.0.0/16", odd], testNote);
      assert.deepEqual(refused, { ok: false, error: "invalid_cidr", value: odd }, odd);
    }
    const plain = ["127.0.0.10", "0.0.0.0/0", "::ffff:127.0.0.1", "2001:DB8::/32", "10.0.0.0/8"];
    assert.equal((await ctx.services.partners.setIps(p.id, plain, testNote)).ok, true);
    // A list written before such entries were refused: its odd entries match no host at all.
    await sql`UPDATE partners SET allowed_ips = ${["127.0.0.010", "0177.0.0.1", "127.1"]}::text[]
               WHERE id = ${p.id}`.execute(ctx.services.database.db);
    for (const host of ["127.0.0.8", "127.0.0.10", "127.0.0.1"]) {
      assertUnauthorized(await ctx.signed({ method: "GET", url, partner: p, remoteAddress: host }), host);
    }
    await sql`UPDATE partners SET allowed_ips = ${["127.0.0.8", "127.0.0.010"]}::text[]
               WHERE id = ${p.id}`.execute(ctx.services.database.db);
    assert.equal(
      (await ctx.signed({ method: "GET", url, partner: p, remoteAddress: "127.0.0.8" })).statusCode,
      200,
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

    await ctx.services.partners.setActive(p.id, false, testNote);
    assertUnauthorized(await post(p), "disabled since the last request");
    assert.equal(await recorded(), 2, "a refused request records nothing");
    await ctx.services.partners.setActive(p.id, true, testNote);
    assert.equal((await post(p)).statusCode, 404, "enabled again");
    assert.equal(await recorded(), 3);

    const next = generateKeyPair();
    const rotated = { ...p, privateKeyPem: next.privateKeyPem, publicKeyPem: next.publicKeyPem };
    assert.ok((await ctx.services.partners.setKey(p.id, next.publicKeyPem, testNote)).ok);
    assert.equal((await post(rotated)).statusCode, 404, "the new key, first request after the change");
    assertUnauthorized(await post(p), "the old key");
    assert.equal((await post(rotated)).statusCode, 404, "the new key again");
    assert.equal(await recorded(), 5);

    assert.ok((await ctx.services.partners.setIps(p.id, ["10.9.0.0/16"], testNote)).ok);
    assertUnauthorized(await post(rotated, "127.0.0.1"), "an address no longer listed");
    assert.equal((await post(rotated, "10.9.1.1")).statusCode, 404, "an address still listed");
    assert.equal(await recorded(), 6);

    // A key changed back and forth between two requests, and a replay after the change.
    assert.ok((await ctx.services.partners.setKey(p.id, p.publicKeyPem, testNote)).ok);
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

describe("the signed path is the path routed (raw targets over a socket)", () => {
  let ctx: TestContext;
  let port: number;
  before(async () => {
    ctx = await startTestContext();
    await ctx.app.listen({ port: 0, host: "127.0.0.1" });
    port = (ctx.app.server.address() as AddressInfo).port;
    const created = await ctx.signed({
      method: "POST",
      url: "/v1/partner/clients",
      body: clientPayload(1, { partner_client_id: "a/b c%?é" }),
    });
    assert.equal(created.statusCode, 201, created.body);
  });
  after(async () => {
    await ctx.close();
  });

  /** GET `target` exactly as given, signed over `signed` (the same target by default). */
  function get(target: string, o: { signed?: string; unsigned?: boolean } = {}): Promise<RawResponse> {
    ctx.clock.advance(1);
    const sig = o.unsigned
      ? {}
      : signAsSent({
          partnerId: ctx.partner.id,
          privateKey: ctx.partner.privateKeyPem,
          method: "GET",
          target: o.signed ?? target,
          nowMs: ctx.clock.nowMs(),
        });
    const headers = Object.entries(sig).map(([k, v]) => `\r\n${k}: ${v}`);
    return rawRequest(port, `GET ${target} HTTP/1.1\r\nHost: 127.0.0.1${headers.join("")}`);
  }

  function assertRefused(res: RawResponse, why: string): void {
    assert.equal(res.status, 401, `${why}: status`);
    assert.equal(res.body, unauthorizedBody, `${why}: body`);
  }

  test("a target signed as sent whose path is not the routed one is a 401", async () => {
    const cases: [string, string][] = [
      ["percent-encoded letter in a static segment", "/v1/partner/asset-pair%73"],
      ["percent-encoded letter, lower-case hex", "/v1/partner/asset%2dpairs"],
      ["percent-encoded letter in the prefix", "/v1/%70artner/asset-pairs"],
      ["fragment", "/v1/partner/asset-pairs#x"],
      ["fragment after a query", "/v1/partner/asset-pairs?a=1#x"],
      ["empty fragment", "/v1/partner/asset-pairs#"],
      ["dot segment as a parameter", "/v1/partner/clients/../"],
      ["single-dot segment as a parameter", "/v1/partner/clients/./"],
      ["encoded dot segment as a parameter", "/v1/partner/clients/%2E%2E/"],
      ["percent-encoded static segment after a parameter", "/v1/partner/clients/client-1/%64ocuments"],
    ];
    for (const [why, target] of cases) assertRefused(await get(target), why);
    // Absolute form: the path part is what a client signs; the target is not origin-form.
    assertRefused(
      await get("http://127.0.0.1/v1/partner/asset-pairs", { signed: "/v1/partner/asset-pairs" }),
      "absolute form",
    );
  });

  test("a path that matches no route is a 404 when signed and a 401 when not, whatever it holds", async () => {
    const cases = [
      "/v1/partner/asset-pairs%00",
      "/v1/partner/asset-pairs%2F",
      "/v1/partner/asset-pairs/",
      "/v1/partner/clients//",
      "/v1/partner/clients//documents",
      "/v1/partner/Asset-Pairs",
      "/v1/partner//asset-pairs",
      "/v1/partner/./asset-pairs",
      "/v1/partner/x/../asset-pairs",
      "/v1/partner/asset-pairs;x=1",
      "/v1/partner/orders/ref/a%FFb",
    ];
    for (const target of cases) {
      const signed = await get(target);
      assert.equal(signed.status, 404, `${target}: ${signed.body}`);
      assert.equal(signed.body, '{"code":404,"msg":"Not Found","msg_detail":null}', target);
      assertRefused(await get(target, { unsigned: true }), `${target} unsigned`);
    }
  });

  test("legitimate forms: an empty query, and percent-encoding inside a path parameter", async () => {
    for (const target of [
      "/v1/partner/asset-pairs",
      "/v1/partner/asset-pairs?",
      "/v1/partner/asset-pairs?&",
    ]) {
      const res = await get(target);
      assert.equal(res.status, 200, target);
      assert.ok(Array.isArray(JSON.parse(res.body).items), target);
    }
    // The only way to name the client "a/b c%?é"; any case of hex digits decodes to the same value.
    for (const target of [
      "/v1/partner/clients/a%2Fb%20c%25%3F%C3%A9/",
      "/v1/partner/clients/a%2fb%20c%25%3f%c3%a9/",
      "/v1/partner/clients/%61%2Fb%20c%25%3F%C3%A9/",
    ]) {
      const res = await get(target);
      assert.equal(res.status, 200, `${target}: ${res.body}`);
      assert.equal(JSON.parse(res.body).result.partner_client_id, "a/b c%?é");
    }
    // A target signed in one form and sent in another is still refused.
    assertRefused(
      await get("/v1/partner/clients/a%2Fb%20c%25%3F%C3%A9/", {
        signed: "/v1/partner/clients/a%2fb%20c%25%3f%c3%a9/",
      }),
      "hex case differs from the signed target",
    );
  });

  test("bytes outside visible ASCII in the target are refused before anything else", async () => {
    ctx.clock.advance(1);
    const sig = signAsSent({
      partnerId: ctx.partner.id,
      privateKey: ctx.partner.privateKeyPem,
      method: "GET",
      target: "/v1/partner/clients/é/",
      nowMs: ctx.clock.nowMs(),
    });
    const headers = Object.entries(sig).map(([k, v]) => `\r\n${k}: ${v}`);
    const head = Buffer.concat([
      Buffer.from("GET /v1/partner/clients/"),
      Buffer.from("é", "utf8"),
      Buffer.from(`/ HTTP/1.1\r\nHost: 127.0.0.1${headers.join("")}`),
    ]);
    const res = await rawRequest(port, head);
    assert.ok(res.status === 400 || res.status === 401, `status ${res.status}`);
    assert.notEqual(res.status, 200);
  });
});

describe("every body is read before authentication, also where nothing else reads it", () => {
  let ctx: TestContext;
  let port: number;
  before(async () => {
    ctx = await startTestContext();
    await ctx.app.listen({ port: 0, host: "127.0.0.1" });
    port = (ctx.app.server.address() as AddressInfo).port;
    const created = await ctx.signed({ method: "POST", url: "/v1/partner/clients", body: clientPayload(1) });
    assert.equal(created.statusCode, 201, created.body);
  });
  after(async () => {
    await ctx.close();
  });

  const notFoundBody = '{"code":404,"msg":"Not Found","msg_detail":null}';
  const tooLargeBody = '{"code":413,"msg":"Payload Too Large","msg_detail":null}';

  interface Sent {
    method: string;
    target: string;
    body: Buffer | string;
    /** The body the signature covers; the one sent by default. */
    signedBody?: Buffer | string;
    contentType?: string;
    unsigned?: boolean;
    /** Content-Length as declared (the body's length by default); null: chunked. */
    contentLength?: number | null;
  }

  function signature(s: Sent): Record<string, string> {
    if (s.unsigned) return {};
    ctx.clock.advance(1);
    return signRequest({
      partnerId: ctx.partner.id,
      privateKey: ctx.partner.privateKeyPem,
      method: s.method,
      target: s.target,
      body: s.signedBody ?? s.body,
      nowMs: ctx.clock.nowMs(),
    }) as unknown as Record<string, string>;
  }

  /** Over a socket, byte for byte; a null contentLength sends the body as one chunk. */
  function overHttp(s: Sent): Promise<RawResponse> {
    const bytes = Buffer.isBuffer(s.body) ? s.body : Buffer.from(s.body, "utf8");
    const headers = { ...signature(s), "content-type": s.contentType ?? "application/json" };
    const lines = Object.entries(headers).map(([k, v]) => `\r\n${k}: ${v}`);
    const framing =
      s.contentLength === null
        ? "\r\nTransfer-Encoding: chunked"
        : `\r\nContent-Length: ${s.contentLength ?? bytes.length}`;
    const body =
      s.contentLength === null
        ? Buffer.concat([
            Buffer.from(`${bytes.length.toString(16)}\r\n`),
            bytes,
            Buffer.from("\r\n0\r\n\r\n"),
          ])
        : bytes;
    return rawRequest(
      port,
      `${s.method} ${s.target} HTTP/1.1\r\nHost: 127.0.0.1${lines.join("")}${framing}`,
      body,
    );
  }

  function injected(s: Sent): Promise<LightMyRequestResponse> {
    return ctx.app.inject({
      method: s.method as "GET",
      url: s.target,
      headers: { ...signature(s), "content-type": s.contentType ?? "application/json" },
      payload: s.body,
      remoteAddress: "127.0.0.1",
    });
  }

  /** Status and body over both transports. */
  async function both(s: Sent): Promise<{ status: number; body: string }[]> {
    const raw = await overHttp(s);
    const inj = await injected(s);
    return [
      { status: raw.status, body: raw.body },
      { status: inj.statusCode, body: inj.body },
    ];
  }

  async function clientRows(): Promise<string> {
    const res = await ctx.signed({ method: "GET", url: "/v1/partner/clients" });
    assert.equal(res.statusCode, 200);
    return res.body;
  }

  test("a GET with a body: signed over the bytes sent it is answered, signed as empty it is a 401", async () => {
    const target = "/v1/partner/asset-pairs";
    const expected = await ctx.signed({ method: "GET", url: target });
    assert.equal(expected.statusCode, 200);
    for (const body of ["x", '{"a":1}', Buffer.from([0xff, 0x00, 0xfe])]) {
      for (const res of await both({ method: "GET", target, body })) {
        assert.equal(res.status, 200, `${String(body)}: ${res.body}`);
        assert.equal(res.body, expected.body, "the route ignores the body");
      }
      for (const res of await both({ method: "GET", target, body, signedBody: "" })) {
        assert.equal(res.status, 401, `signed as empty: ${res.body}`);
        assert.equal(res.body, unauthorizedBody);
      }
      for (const res of await both({ method: "GET", target, body, unsigned: true })) {
        assert.equal(res.status, 401);
      }
    }
    // Chunked: the body is read to its end all the same.
    const chunked = await overHttp({ method: "GET", target, body: "chunked body", contentLength: null });
    assert.equal(chunked.status, 200, chunked.body);
    const chunkedEmpty = await overHttp({
      method: "GET",
      target,
      body: "chunked body",
      signedBody: "",
      contentLength: null,
    });
    assert.equal(chunkedEmpty.status, 401);
    // A GET whose path takes a parameter, and a public GET, which is not signed at all.
    const one = await overHttp({ method: "GET", target: "/v1/partner/clients/client-1/", body: "x" });
    assert.equal(one.status, 200, one.body);
    assert.equal(JSON.parse(one.body).result.partner_client_id, "client-1");
    const pub = await overHttp({ method: "GET", target: "/v1/public/assets", body: "x", unsigned: true });
    assert.equal(pub.status, 200, pub.body);
  });

  test("a GET body over the JSON limit is a 413, declared or sent chunked", async () => {
    const target = "/v1/partner/asset-pairs";
    const big = Buffer.alloc(limits.jsonBodyBytesMax + 1, 0x20);
    for (const contentLength of [undefined, null] as const) {
      const res = await overHttp({ method: "GET", target, body: big, contentLength });
      assert.equal(res.status, 413, `${contentLength === null ? "chunked" : "declared"}: ${res.body}`);
      assert.equal(res.body, tooLargeBody);
    }
    const atLimit = await overHttp({ method: "GET", target, body: big.subarray(0, limits.jsonBodyBytesMax) });
    assert.equal(atLimit.status, 200);
  });

  test("a body to a path the router cannot decode is read, then authenticated, then a 404", async () => {
    const before = await clientRows();
    const update = JSON.stringify({ first_name: "Changed" });
    const cases: Sent[] = [
      { method: "PUT", target: "/v1/partner/clients/%FE%FF/", body: update },
      { method: "PUT", target: "/v1/partner/clients/%ED%A0%80/activation", body: '{"active":true}' },
      { method: "POST", target: "/v1/partner/clients/%%/documents", body: '{"a":1}' },
      {
        method: "POST",
        target: "/v1/partner/clients/%%/documents",
        body: `--b\r\nContent-Disposition: form-data; name="document_type"\r\n\r\npassport\r\n--b--\r\n`,
        contentType: "multipart/form-data; boundary=b",
      },
      { method: "GET", target: "/v1/partner/clients/%FE/", body: "x" },
      { method: "DELETE", target: "/v1/partner/clients/%E0%80%80/", body: "x", contentType: "text/plain" },
    ];
    for (const s of cases) {
      const why = `${s.method} ${s.target}`;
      for (const res of await both(s)) {
        assert.equal(res.status, 404, `${why}: ${res.body}`);
        assert.equal(res.body, notFoundBody, why);
      }
      for (const res of await both({ ...s, signedBody: "" })) {
        assert.equal(res.status, 401, `${why} signed as empty: ${res.body}`);
        assert.equal(res.body, unauthorizedBody);
      }
      for (const res of await both({ ...s, unsigned: true }))
        assert.equal(res.status, 401, `${why} unsigned`);
    }
    const chunked = await overHttp({ ...cases[0]!, contentLength: null });
    assert.equal(chunked.status, 404, chunked.body);
    assert.equal(await clientRows(), before, "nothing changed");
  });

  test("the limit there is the route's: the JSON limit, the multipart limit for an upload", async () => {
    const target = "/v1/partner/clients/%FE/documents";
    const multipart = "multipart/form-data; boundary=b";
    const twoMiB = Buffer.alloc(2 * 1024 * 1024, 0x61);
    const json = await overHttp({ method: "POST", target, body: twoMiB });
    assert.equal(json.status, 413, json.body);
    assert.equal(json.body, tooLargeBody);
    const upload = await overHttp({ method: "POST", target, body: twoMiB, contentType: multipart });
    assert.equal(upload.status, 404, upload.body);
    // Elsewhere a multipart body gets the JSON limit, as the routes give it.
    const elsewhere = await overHttp({
      method: "PUT",
      target: "/v1/partner/clients/%FE/",
      body: twoMiB,
      contentType: multipart,
    });
    assert.equal(elsewhere.status, 413, elsewhere.body);
    const overUpload = await overHttp({
      method: "POST",
      target,
      body: Buffer.alloc(0),
      contentType: multipart,
      contentLength: limits.multipartBodyBytesMax + 1,
    });
    assert.equal(overUpload.status, 413, overUpload.body);
    const chunkedOver = await overHttp({
      method: "PUT",
      target: "/v1/partner/clients/%FE/",
      body: Buffer.alloc(limits.jsonBodyBytesMax + 1, 0x20),
      contentLength: null,
    });
    assert.equal(chunkedOver.status, 413, chunkedOver.body);
  });

  test("a client that goes away mid-body costs nothing: the server keeps answering", async () => {
    const sig = signature({ method: "PUT", target: "/v1/partner/clients/%FE/", body: "x".repeat(100) });
    for (const [method, target] of [
      ["PUT", "/v1/partner/clients/%FE/"],
      ["GET", "/v1/partner/asset-pairs"],
    ] as const) {
      const lines = Object.entries(sig).map(([k, v]) => `\r\n${k}: ${v}`);
      await new Promise<void>((resolve, reject) => {
        const socket = net.connect(port, "127.0.0.1");
        const timer = setTimeout(() => {
          socket.destroy();
          reject(new Error("the server did not close"));
        }, 5_000);
        socket.on("error", () => {});
        socket.on("close", () => {
          clearTimeout(timer);
          resolve();
        });
        socket.write(
          `${method} ${target} HTTP/1.1\r\nHost: 127.0.0.1${lines.join("")}\r\nContent-Type: application/json` +
            "\r\nContent-Length: 100\r\n\r\nxxxxxxxxxx",
          () => setTimeout(() => socket.destroy(), 50),
        );
      });
    }
    const res = await ctx.signed({ method: "GET", url: "/v1/partner/asset-pairs" });
    assert.equal(res.statusCode, 200);
    const res404 = await overHttp({ method: "PUT", target: "/v1/partner/clients/%FE/", body: "x" });
    assert.equal(res404.status, 404);
  });
});
