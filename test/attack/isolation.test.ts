// Attack suite: one partner against another's data. Partner B, with a valid key, names partner A's
// client ids, order ids, order references, document ids, quote tokens and download links on every
// route that takes them: each is answered as if it did not exist (2008 for a client, 404 for an
// order or a document, 4008 for a token, the plain 404 for an altered link), and nothing changes.

import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { clientPayload, multipartBody } from "../../packages/server/src/testing/fixtures.ts";
import {
  assertAlive,
  assertCode,
  assertPlain,
  everyCase,
  type RawResponse,
  type SignOptions,
  startTarget,
  type Target,
  unchanged,
  wholeFiles,
} from "./target.ts";

const timeout = 240_000;

describe("attack: cross-partner isolation", { timeout }, () => {
  let t: Target;
  let aClient: string;
  let aOther: string;
  let bClient: string;
  let aOrderId: number;
  const aRef = "isolation-a-1";
  let aDocId: number;
  let aLink: string;
  let aToken: string;

  before(async () => {
    t = await startTarget();
    aClient = (await t.createClient(t.a, 1)).partnerClientId;
    aOther = (await t.createClient(t.a, 2)).partnerClientId;
    bClient = (await t.createClient(t.b, 3)).partnerClientId;
    const d = await t.deposit(t.a, aClient, "5000", aRef);
    assert.equal(d.status, 200, d.text);
    aOrderId = (d.json as { result: { id: number } }).result.id;
    const dB = await t.deposit(t.b, bClient, "5000", "isolation-b-1");
    assert.equal(dB.status, 200, dB.text);
    const form = multipartBody([
      { name: "type", data: "government_id" },
      { name: "front_file", filename: "id.pdf", data: wholeFiles.pdf },
    ]);
    const up = await t.call({
      method: "POST",
      target: `/v1/partner/clients/${aClient}/documents`,
      body: form.body,
      contentType: form.contentType,
    });
    assert.equal(up.status, 201, up.text);
    const doc = (up.json as { result: { id: number; front_file: string } }).result;
    aDocId = doc.id;
    aLink = doc.front_file;
    const price = await t.admin("PUT", "/admin/pairs/BTC-AED/price", {
      buy: "350000",
      sell: "349000",
      reason: "test set-up",
    });
    assert.equal(price.status, 200, price.text);
    const q = await t.call({
      method: "POST",
      target: "/v1/partner/quotes",
      body: { partner_client_id: aClient, asset_pair: "BTC-AED", side: "buy", base_amount: "0.001" },
    });
    assert.equal(q.status, 200, q.text);
    aToken = (q.json as { result: { token: string } }).result.token;
  });
  after(async () => {
    if (t !== undefined) {
      assertAlive(t);
      await t.close();
    }
  });

  const asB = (o: Omit<SignOptions, "partner">) => t.call({ ...o, partner: t.b });
  const invalidClient = (res: RawResponse, what: string) =>
    assertCode(res, 400, 2008, "Invalid client ID", what);
  const update = () => {
    const p = clientPayload(1, { name: "Taken Over" });
    for (const k of ["partner_client_id", "account_type", "birth_date", "place_of_birth_id"]) delete p[k];
    return p;
  };

  test("B naming A's client id: 2008 on every client-scoped route", async () => {
    const form = multipartBody([
      { name: "type", data: "government_id" },
      { name: "front_file", filename: "id.png", data: wholeFiles.png },
    ]);
    const calls: [string, Omit<SignOptions, "partner">][] = [
      ["read", { method: "GET", target: `/v1/partner/clients/${aClient}/` }],
      ["update", { method: "PUT", target: `/v1/partner/clients/${aClient}/`, body: update() }],
      [
        "deactivate",
        { method: "PUT", target: `/v1/partner/clients/${aClient}/activation`, body: { active: false } },
      ],
      ["documents", { method: "GET", target: `/v1/partner/clients/${aClient}/documents` }],
      ["document", { method: "GET", target: `/v1/partner/clients/${aClient}/documents/${aDocId}` }],
      [
        "upload",
        {
          method: "POST",
          target: `/v1/partner/clients/${aClient}/documents`,
          body: form.body,
          contentType: form.contentType,
        },
      ],
      ["balances", { method: "GET", target: `/v1/partner/balances?partner_client_id=${aClient}` }],
      ["balance", { method: "GET", target: `/v1/partner/balances/AED?partner_client_id=${aClient}` }],
      ["orders", { method: "GET", target: `/v1/partner/orders?partner_client_id=${aClient}` }],
      [
        "deposit",
        {
          method: "POST",
          target: "/v1/partner/deposits",
          body: { partner_client_id: aClient, asset_id: "AED", amount: "1", partner_order_ref: "b-steal-1" },
        },
      ],
      [
        "withdrawal",
        {
          method: "POST",
          target: "/v1/partner/withdrawals",
          body: { partner_client_id: aClient, asset_id: "AED", amount: "1", partner_order_ref: "b-steal-2" },
        },
      ],
      [
        "quote",
        {
          method: "POST",
          target: "/v1/partner/quotes",
          body: { partner_client_id: aClient, asset_pair: "BTC-AED", side: "buy", base_amount: "0.001" },
        },
      ],
      [
        "execute A's token for A's client",
        {
          method: "POST",
          target: "/v1/partner/quotes/execute",
          body: { partner_client_id: aClient, token: aToken },
        },
      ],
    ];
    await unchanged(t, async () => {
      await everyCase(calls, async ([what, call]) => invalidClient(await asB(call), what));
      // The numeric client id is no path either.
      const res = await asB({ method: "GET", target: "/v1/partner/clients/1/" });
      if (aClient !== "1") invalidClient(res, "numeric id");
    });
  });

  test("B naming A's order id, order reference, document id or quote token: as if absent", async () => {
    await unchanged(t, async () => {
      assertPlain(
        await asB({ method: "GET", target: `/v1/partner/orders/${aOrderId}` }),
        404,
        "A's order id",
      );
      assertPlain(
        await asB({ method: "GET", target: `/v1/partner/orders/ref/${aRef}` }),
        404,
        "A's order ref",
      );
      assertPlain(
        await asB({ method: "GET", target: `/v1/partner/clients/${bClient}/documents/${aDocId}` }),
        404,
        "A's document under B's client",
      );
      // A's own other client does not reach the document either.
      assertPlain(
        await t.call({ method: "GET", target: `/v1/partner/clients/${aOther}/documents/${aDocId}` }),
        404,
        "A's document under A's other client",
      );
      assertCode(
        await asB({
          method: "POST",
          target: "/v1/partner/quotes/execute",
          body: { partner_client_id: bClient, token: aToken, partner_order_ref: "b-steal-3" },
        }),
        400,
        4008,
        "Trading token is invalid",
        "A's token for B's client",
      );
      assertCode(
        await t.call({
          method: "POST",
          target: "/v1/partner/quotes/execute",
          body: { partner_client_id: aOther, token: aToken, partner_order_ref: "a-other-1" },
        }),
        400,
        4008,
        "Trading token is invalid",
        "A's token for A's other client",
      );
      // B's lists hold none of A's.
      const orders = await asB({ method: "GET", target: "/v1/partner/orders?page_size=100" });
      const refs = (orders.json as { items: { partner_order_ref: string }[] }).items.map(
        (o) => o.partner_order_ref,
      );
      assert.deepEqual(refs, ["isolation-b-1"]);
      const clients = await asB({ method: "GET", target: "/v1/partner/clients?page_size=100" });
      assert.deepEqual(
        (clients.json as { items: { partner_client_id: string }[] }).items.map((c) => c.partner_client_id),
        [bClient],
      );
    });
    // B may use A's reference for its own order: references are per partner, and A's stays A's.
    const own = await t.deposit(t.b, bClient, "1", aRef);
    assert.equal(own.status, 200, own.text);
    const aOrder = await t.call({ method: "GET", target: `/v1/partner/orders/ref/${aRef}` });
    assert.equal((aOrder.json as { result: { id: number } }).result.id, aOrderId);
  });

  test("download links: the link is the credential; any altered link is the plain 404", async () => {
    const u = new URL(aLink);
    const get = (pathAndQuery: string, headers = "") =>
      t.raw(`GET ${pathAndQuery} HTTP/1.1\r\nHost: x\r\n${headers}Connection: close\r\n\r\n`);
    const ok = await get(`${u.pathname}${u.search}`);
    assert.equal(ok.status, 200, ok.text);
    assert.equal(ok.headers["content-type"], "application/pdf");
    assert.equal(ok.headers["cache-control"], "private, no-store");
    const key = u.pathname.split("/").at(-1)!;
    const expires = u.searchParams.get("expires")!;
    const signature = u.searchParams.get("signature")!;
    const flip = (s: string) => (s[0] === "A" ? "B" : "A") + s.slice(1);
    await unchanged(t, async () => {
      await everyCase(
        [
          `/v1/files/${flip(key)}?expires=${expires}&signature=${signature}`,
          `/v1/files/${key}?expires=${Number(expires) + 1}&signature=${signature}`,
          `/v1/files/${key}?expires=9999999999&signature=${signature}`,
          `/v1/files/${key}?expires=${expires}&signature=${flip(signature)}`,
          `/v1/files/${key}?expires=${expires}`,
          `/v1/files/${key}?signature=${signature}`,
          `/v1/files/${key}`,
          `/v1/files/${key}?expires=${expires}&signature=${signature}&signature=${signature}`,
          `/v1/files/${key}?expires=${expires}.0&signature=${signature}`,
          `/v1/files/..%2F..%2Ffile-url-secret?expires=${expires}&signature=${signature}`,
          `/v1/files/../file-url-secret?expires=${expires}&signature=${signature}`,
          `/v1/files/${key.slice(0, 2)}%2F${key}?expires=${expires}&signature=${signature}`,
          `/v1/files/${key}%00?expires=${expires}&signature=${signature}`,
        ],
        async (target) => assertPlain(await get(target), 404, target),
      );
    });
  });
});
