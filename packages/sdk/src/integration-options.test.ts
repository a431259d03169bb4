// What an integrator gets beyond the resources: the request id of every call on its result,
// keys as PEM, raw seed or KeyObject, an undici dispatcher, and the options from the environment.

import assert from "node:assert/strict";
import { createPrivateKey } from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, describe, test } from "node:test";
import { Counterpart, jsonResponse, NotFoundError, optionsFromEnv } from "./index.ts";
import { baseUrl, fakeClient, keys, ok, order, partnerId } from "./test-fakes.ts";

const withId = (n: number, body: unknown, status = 200) =>
  jsonResponse(status, body, { "x-request-id": `req-${n}` });

describe("lastResponse: the request id of every call on its result", () => {
  test("a record, a list and its items, a page and its items, listAll's items", async () => {
    const fake = fakeClient((_r, n) => {
      if (n === 0) return withId(n, { result: { id: "AED" } });
      if (n === 1) return withId(n, { items: [{ id: "AED" }, { id: "BTC" }] });
      return withId(n, { items: [order({ id: 7 })], total: 1, page: 1, page_size: 100 });
    });
    const asset = await fake.client.assets.get("AED");
    assert.deepEqual(asset.lastResponse, {
      requestId: "req-0",
      status: 200,
      method: "GET",
      target: "/v1/public/assets/AED",
    });
    // Not part of the record: JSON, spreading and deep equality see the service's fields only.
    assert.equal(JSON.stringify(asset), '{"id":"AED"}');
    assert.deepEqual({ ...asset }, { id: "AED" });
    assert.deepEqual(Object.keys(asset), ["id"]);

    const list = await fake.client.assets.list();
    assert.equal(list.lastResponse.requestId, "req-1");
    assert.deepEqual(
      list.map((a) => a.lastResponse.requestId),
      ["req-1", "req-1"],
    );

    const page = await fake.client.orders.list();
    assert.equal(page.lastResponse.requestId, "req-2");
    assert.equal(page.items[0]?.lastResponse.requestId, "req-2");
    assert.equal(page.lastResponse.target, "/v1/partner/orders");

    const all = [];
    for await (const o of fake.client.orders.listAll()) all.push(o.lastResponse.requestId);
    assert.deepEqual(all, ["req-3"]);
  });

  test("an order result, created and replayed; setActive resolves to the response's facts", async () => {
    const fake = fakeClient((_r, n) => {
      if (n === 0) return withId(n, { result: order() }, 201);
      if (n === 1)
        return jsonResponse(409, { code: 2020, msg: "dup", msg_detail: null }, { "x-request-id": "req-1" });
      if (n === 2) return withId(n, { result: order() });
      return jsonResponse(200, {}, { "x-request-id": "req-3" });
    });
    const request = {
      partner_client_id: "client-1",
      asset_id: "AED",
      amount: "100.5",
      partner_order_ref: "dep-1",
    };
    const created = await fake.client.deposits.create(request);
    assert.equal(created.replayed, false);
    assert.equal(created.lastResponse.requestId, "req-0");
    assert.equal(created.lastResponse.status, 201);
    assert.equal(created.order.lastResponse.requestId, "req-0");
    assert.deepEqual(Object.keys(created), ["order", "replayed"]);

    const replayed = await fake.client.deposits.create(request);
    assert.equal(replayed.replayed, true);
    // The order came from the lookup by reference: its request id is the lookup's.
    assert.equal(replayed.lastResponse.requestId, "req-2");
    assert.equal(replayed.lastResponse.target, "/v1/partner/orders/ref/dep-1");

    const facts = await fake.client.clients.setActive("client-1", false);
    assert.deepEqual(facts, {
      requestId: "req-3",
      status: 200,
      method: "PUT",
      target: "/v1/partner/clients/client-1/activation",
    });
  });

  test("errors carry the request id of the refused call", async () => {
    const fake = fakeClient(() =>
      jsonResponse(404, { code: 404, msg: "Not Found", msg_detail: null }, { "x-request-id": "req-err" }),
    );
    await assert.rejects(fake.client.orders.get(9), (err: unknown) => {
      assert.ok(err instanceof NotFoundError);
      assert.equal(err.requestId, "req-err");
      return true;
    });
  });
});

describe("privateKey: PEM, raw 32-byte seed or KeyObject sign alike", () => {
  const seed = createPrivateKey(keys.privateKeyPem).export({ format: "jwk" }).d!;
  const seedBytes = Buffer.from(seed, "base64url");

  test("the three forms produce the same signature", async () => {
    const signatures: string[] = [];
    for (const privateKey of [
      keys.privateKeyPem,
      seedBytes,
      new Uint8Array(seedBytes),
      createPrivateKey(keys.privateKeyPem),
    ]) {
      const fake = fakeClient(() => ok({ items: [] }), { privateKey });
      await fake.client.assetPairs.list();
      signatures.push(fake.requests[0]!.headers["x-signature"]!);
    }
    assert.equal(seedBytes.length, 32);
    assert.equal(new Set(signatures).size, 1);
  });

  test("bytes of another length are refused before anything is sent", () => {
    for (const bad of [Buffer.alloc(31), Buffer.alloc(48), new Uint8Array(0)]) {
      assert.throws(
        () => new Counterpart({ baseUrl, partnerId, privateKey: bad }),
        (err: unknown) => err instanceof TypeError && /32-byte Ed25519 seed/.test(err.message),
      );
    }
  });
});

describe("dispatcher: handed to the global fetch", () => {
  const realFetch = globalThis.fetch;
  afterEach(() => {
    globalThis.fetch = realFetch;
  });

  test("every request carries the dispatcher given", async () => {
    const dispatcher = { name: "an undici Agent" };
    const seen: unknown[] = [];
    globalThis.fetch = (async (_url: string, init: { dispatcher?: unknown }) => {
      seen.push(init.dispatcher);
      return jsonResponse(200, { items: [] }) as Response;
    }) as typeof fetch;
    const client = new Counterpart({ baseUrl, partnerId, privateKey: keys.privateKeyPem, dispatcher });
    await client.assets.list();
    await client.assetPairs.list({ timeoutMs: 5_000 });
    assert.equal(seen.length, 2);
    assert.ok(seen.every((d) => d === dispatcher));
  });
});

describe("optionsFromEnv: the sandbox/production switch is the environment", () => {
  test("reads the URL, the partner id and the key (file or text)", () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "cp-sdk-env-"));
    try {
      const keyFile = path.join(dir, "private-key.pem");
      fs.writeFileSync(keyFile, keys.privateKeyPem);
      const fromFile = optionsFromEnv({
        COUNTERPART_URL: "https://sandbox.example",
        COUNTERPART_PARTNER_ID: partnerId,
        COUNTERPART_KEY_FILE: keyFile,
      });
      assert.deepEqual(fromFile, {
        baseUrl: "https://sandbox.example",
        partnerId,
        privateKey: keys.privateKeyPem,
      });
      const fromText = optionsFromEnv({
        COUNTERPART_URL: "https://api.example",
        COUNTERPART_PARTNER_ID: partnerId,
        COUNTERPART_PRIVATE_KEY: keys.privateKeyPem,
      });
      assert.equal(fromText.privateKey, keys.privateKeyPem);
      assert.ok(new Counterpart(fromText));
      assert.throws(
        () =>
          optionsFromEnv({
            COUNTERPART_URL: "https://api.example",
            COUNTERPART_PARTNER_ID: partnerId,
            COUNTERPART_KEY_FILE: path.join(dir, "absent.pem"),
          }),
        /cannot read COUNTERPART_KEY_FILE/,
      );
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  test("names every missing variable", () => {
    assert.throws(
      () => optionsFromEnv({}),
      (err: unknown) =>
        err instanceof TypeError &&
        err.message ===
          "optionsFromEnv: set COUNTERPART_URL, COUNTERPART_PARTNER_ID, COUNTERPART_KEY_FILE (or COUNTERPART_PRIVATE_KEY)",
    );
    assert.throws(
      () => optionsFromEnv({ COUNTERPART_URL: "https://x.example" }),
      /set COUNTERPART_PARTNER_ID,/,
    );
  });
});
