// The helpers integrators use in their own tests: key pair, signer, signed fetch, and the check
// a fake server runs.

import assert from "node:assert/strict";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { after, before, describe, test } from "node:test";
import { Counterpart, createTestSigner, generateTestKeyPair, verifyTestRequest } from "./index.ts";

describe("test signing helpers", () => {
  const keysA = generateTestKeyPair();
  const keysB = generateTestKeyPair();
  const now = 1_795_000_000_000;

  test("generateTestKeyPair: a UUID partner id and an Ed25519 PEM pair", () => {
    assert.match(keysA.partnerId, /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    assert.match(keysA.publicKeyPem, /^-----BEGIN PUBLIC KEY-----/);
    assert.match(keysA.privateKeyPem, /^-----BEGIN PRIVATE KEY-----/);
    assert.notEqual(keysA.partnerId, keysB.partnerId);
  });

  test("createTestSigner headers verify; any change to the request does not", () => {
    const signer = createTestSigner({
      partnerId: keysA.partnerId,
      privateKeyPem: keysA.privateKeyPem,
      now: () => now,
    });
    const request = { method: "POST", target: "/v1/partner/deposits", body: '{"amount":"1"}' };
    const headers = signer.headers(request);
    assert.equal(headers["X-Partner-ID"], keysA.partnerId);
    assert.equal(headers["X-Timestamp"], String(now));
    const check = (overrides: Partial<Parameters<typeof verifyTestRequest>[0]>) =>
      verifyTestRequest({
        publicKeyPem: keysA.publicKeyPem,
        ...request,
        headers: { ...headers },
        nowMs: now + 1_000,
        ...overrides,
      });
    assert.deepEqual(check({}), { ok: true, partnerId: keysA.partnerId });
    assert.deepEqual(check({ body: '{"amount":"2"}' }), { ok: false, reason: "bad_signature" });
    assert.deepEqual(check({ target: "/v1/partner/withdrawals" }), { ok: false, reason: "bad_signature" });
    assert.deepEqual(check({ publicKeyPem: keysB.publicKeyPem }), { ok: false, reason: "bad_signature" });
    assert.deepEqual(check({ nowMs: now + 60_001 }), { ok: false, reason: "bad_timestamp" });
    assert.deepEqual(check({ nowMs: now - 1 }), { ok: false, reason: "bad_timestamp" });
    assert.deepEqual(check({ headers: { "X-Partner-ID": keysA.partnerId } }), {
      ok: false,
      reason: "missing_headers",
    });
    assert.deepEqual(check({ publicKeyPem: "nope" }), { ok: false, reason: "bad_public_key" });
  });

  describe("against a fake server", () => {
    let server: http.Server;
    let url: string;
    const seen: { target: string; check: ReturnType<typeof verifyTestRequest> }[] = [];
    before(async () => {
      server = http.createServer((req, res) => {
        const chunks: Buffer[] = [];
        req.on("data", (c: Buffer) => chunks.push(c));
        req.on("end", () => {
          const body = Buffer.concat(chunks);
          const check = verifyTestRequest({
            publicKeyPem: keysA.publicKeyPem,
            method: req.method ?? "",
            target: req.url ?? "",
            body: body.length === 0 ? undefined : body,
            headers: req.headers,
          });
          seen.push({ target: req.url ?? "", check });
          res.writeHead(check.ok ? 200 : 401, { "content-type": "application/json" });
          res.end(
            JSON.stringify(check.ok ? { items: [] } : { code: 401, msg: "Unauthorized", msg_detail: null }),
          );
        });
      });
      await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
      url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    });
    after(() => new Promise<void>((resolve) => server.close(() => resolve())));

    test("signer.fetch sends signed requests a fake server accepts", async () => {
      const signer = createTestSigner({ partnerId: keysA.partnerId, privateKeyPem: keysA.privateKeyPem });
      const res = await signer.fetch(`${url}/v1/partner/orders?status=completed&page=1`);
      assert.equal(res.status, 200);
      const posted = await signer.fetch(`${url}/v1/partner/quotes`, { method: "POST", body: '{"a": 1}' });
      assert.equal(posted.status, 200);
    });

    test("the SDK's own requests pass the same check, and a wrong key is refused", async () => {
      const good = new Counterpart({
        baseUrl: url,
        partnerId: keysA.partnerId,
        privateKey: keysA.privateKeyPem,
      });
      assert.deepEqual(await good.assetPairs.list(), []);
      const wrong = new Counterpart({
        baseUrl: url,
        partnerId: keysA.partnerId,
        privateKey: keysB.privateKeyPem,
      });
      await assert.rejects(wrong.assetPairs.list(), { name: "AuthenticationError", status: 401 });
      assert.deepEqual(seen.at(-1)?.check, { ok: false, reason: "bad_signature" });
    });
  });
});
