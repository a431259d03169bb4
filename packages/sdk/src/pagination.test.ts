// Lists as async iterators: every page its own signed request, stopping at the last page that
// `total` implies, with page_size bounded.

import assert from "node:assert/strict";
import { describe, test } from "node:test";
import type { Client, ClientDocument, Order } from "./index.ts";
import { fakeClient, ok, order, type Recorded } from "./test-fakes.ts";

/** A fake list endpoint over `total` numbered records. */
function pages<T>(total: number, make: (i: number) => T) {
  return (r: Recorded) => {
    const url = new URL(r.target, "http://x");
    const page = Number(url.searchParams.get("page") ?? "1");
    const size = Number(url.searchParams.get("page_size") ?? "10");
    const items = Array.from({ length: Math.max(0, Math.min(size, total - (page - 1) * size)) }, (_, k) =>
      make((page - 1) * size + k + 1),
    );
    return ok({ items, total, page, page_size: size });
  };
}

describe("listAll", () => {
  test("orders: three pages, each signed with a fresh timestamp, stopping at the last", async () => {
    const fake = fakeClient(pages(250, (i) => order({ id: i })));
    const ids: number[] = [];
    let ticks = 0;
    for await (const o of fake.client.orders.listAll({
      status: ["completed"],
      partner_client_id: "client-1",
    })) {
      ids.push(o.id);
      if (o.id % 100 === 0) fake.clock.advance(7); // time passes between pages
      ticks++;
    }
    assert.equal(ticks, 250);
    assert.deepEqual(
      ids,
      Array.from({ length: 250 }, (_, k) => k + 1),
    );
    assert.deepEqual(
      fake.requests.map((r) => r.target),
      [1, 2, 3].map(
        (p) => `/v1/partner/orders?partner_client_id=client-1&status=completed&page=${p}&page_size=100`,
      ),
    );
    const stamps = fake.requests.map((r) => r.headers["X-Timestamp"]);
    assert.equal(new Set(stamps).size, 3, "each page has its own timestamp");
    assert.equal(new Set(fake.requests.map((r) => r.headers["X-Signature"])).size, 3);
  });

  test("an exact multiple of the page size asks no empty extra page", async () => {
    const fake = fakeClient(pages(30, (i) => order({ id: i })));
    const all: Order[] = [];
    for await (const o of fake.client.orders.listAll({ page_size: 10 })) all.push(o);
    assert.equal(all.length, 30);
    assert.equal(fake.requests.length, 3);
  });

  test("an empty list is one request; a start page is honoured", async () => {
    const empty = fakeClient(pages(0, (i) => order({ id: i })));
    for await (const _ of empty.client.orders.listAll()) assert.fail("no items");
    assert.equal(empty.requests.length, 1);
    const from = fakeClient(pages(25, (i) => order({ id: i })));
    const ids: number[] = [];
    for await (const o of from.client.orders.listAll({ page: 2, page_size: 10 })) ids.push(o.id);
    assert.deepEqual(ids, [11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25]);
  });

  test("the end is derived from each response's total: records added meanwhile extend it", async () => {
    let total = 15;
    const fake = fakeClient((r, n) => {
      if (n === 0) total = 25; // ten more appear after the first page
      return pages(total, (i) => order({ id: i }))(r);
    });
    let count = 0;
    for await (const _ of fake.client.orders.listAll({ page_size: 10 })) count++;
    assert.equal(count, 25);
    assert.equal(fake.requests.length, 3);
  });

  test("a short page that still claims more stops at an empty page, never loops", async () => {
    const fake = fakeClient((_r, n) =>
      ok({ items: n === 0 ? [order()] : [], total: 1_000, page: n + 1, page_size: 100 }),
    );
    let count = 0;
    for await (const _ of fake.client.orders.listAll()) count++;
    assert.equal(count, 1);
    assert.equal(fake.requests.length, 2);
  });

  test("breaking out of the loop stops fetching", async () => {
    const fake = fakeClient(pages(1_000, (i) => order({ id: i })));
    for await (const o of fake.client.orders.listAll({ page_size: 10 })) if (o.id === 15) break;
    assert.equal(fake.requests.length, 2);
  });

  test("clients and documents iterate the same way", async () => {
    const clients = fakeClient(pages(205, (i) => ({ id: i }) as Client));
    let n = 0;
    for await (const _ of clients.client.clients.listAll({ status: ["verified"] })) n++;
    assert.equal(n, 205);
    assert.deepEqual(
      clients.requests.map((r) => r.target),
      [1, 2, 3].map((p) => `/v1/partner/clients?status=verified&page=${p}&page_size=100`),
    );

    const docs = fakeClient(pages(3, (i) => ({ id: i }) as ClientDocument));
    const ids: number[] = [];
    for await (const d of docs.client.documents.listAll("client-1", {
      type: ["government_id"],
      page_size: 1,
    }))
      ids.push(d.id);
    assert.deepEqual(ids, [1, 2, 3]);
    assert.deepEqual(
      docs.requests.map((r) => r.target),
      [1, 2, 3].map((p) => `/v1/partner/clients/client-1/documents?type=government_id&page=${p}&page_size=1`),
    );
  });

  test("page bounds are checked before any request", async () => {
    const fake = fakeClient(pages(10, (i) => order({ id: i })));
    for (const bad of [{ page_size: 0 }, { page_size: 101 }, { page: 0 }, { page_size: 2.5 }]) {
      await assert.rejects(async () => {
        for await (const _ of fake.client.orders.listAll(bad)) assert.fail("no items");
      }, RangeError);
      await assert.rejects(fake.client.orders.list(bad), /must be an integer from 1 to/);
    }
    assert.equal(fake.requests.length, 0);
  });
});
