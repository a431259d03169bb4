// docs/reference.md §4.5 and §8 pagination: look-up by id and by reference, the filtered list, 404 for another
// partner's orders, 422 for bad filters and page bounds, 2008 for a foreign client filter.

import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { sql } from "kysely";
import { insertClient } from "../../testing/fixtures.ts";
import { startTestContext, type TestContext } from "../../testing/harness.ts";

describe("orders", () => {
  let ctx: TestContext;
  const ids: number[] = [];
  before(async () => {
    ctx = await startTestContext();
    const db = ctx.services.database.db;
    await insertClient(db, ctx.partner.id, 1);
    await insertClient(db, ctx.partner.id, 2);
    // 12 orders: 8 deposits and 4 withdrawals, alternating clients.
    for (let i = 1; i <= 12; i++) {
      const client = i % 2 === 0 ? "client-2" : "client-1";
      const url = i % 3 === 0 ? "/v1/partner/withdrawals" : "/v1/partner/deposits";
      if (url.endsWith("withdrawals")) {
        await ctx.signed({
          method: "POST",
          url: "/v1/partner/deposits",
          body: { partner_client_id: client, asset_id: "USD", amount: "5", partner_order_ref: `seed-${i}` },
        });
      }
      const res = await ctx.signed({
        method: "POST",
        url,
        body: { partner_client_id: client, asset_id: "USD", amount: "1", partner_order_ref: `o-${i}` },
      });
      assert.equal(res.statusCode, 200);
      ids.push(res.json().result.id);
    }
    // Spread created_at so datetime filters have something to cut: one order per hour back in time.
    const all = await db.selectFrom("orders").select("id").orderBy("id").execute();
    for (const [i, o] of all.entries()) {
      await sql`UPDATE orders SET created_at = timestamptz '2026-11-01 00:00:00+00' + ${`${i} hours`}::interval WHERE id = ${o.id}`.execute(
        db,
      );
    }
  });
  after(async () => {
    await ctx.close();
  });

  const get = (url: string, partner = ctx.partner) => ctx.signed({ method: "GET", url, partner });

  test("GET /orders/{id} returns the order; 404 for absent, malformed or another partner's", async () => {
    const res = await get(`/v1/partner/orders/${ids[0]}`);
    assert.equal(res.statusCode, 200);
    assert.equal(res.json().result.id, ids[0]);
    assert.equal(res.json().result.partner_order_ref, "o-1");
    for (const bad of ["999999", "0", "-1", "abc", "1.5", "99999999999999999999"]) {
      const r = await get(`/v1/partner/orders/${bad}`);
      assert.equal(r.statusCode, 404, bad);
      assert.deepEqual(r.json(), { code: 404, msg: "Not Found", msg_detail: null });
    }
    const other = await ctx.addPartner();
    assert.equal((await get(`/v1/partner/orders/${ids[0]}`, other)).statusCode, 404);
  });

  test("GET /orders/ref/{ref} finds by the partner's own reference only", async () => {
    const res = await get("/v1/partner/orders/ref/o-3");
    assert.equal(res.statusCode, 200);
    assert.equal(res.json().result.type, "withdrawal");
    assert.equal((await get("/v1/partner/orders/ref/O-3")).statusCode, 404);
    assert.equal((await get("/v1/partner/orders/ref/nope")).statusCode, 404);
    const other = await ctx.addPartner();
    assert.equal((await get("/v1/partner/orders/ref/o-3", other)).statusCode, 404);
  });

  test("the list is newest first, paginated with total, page and page_size", async () => {
    const first = await get("/v1/partner/orders");
    assert.equal(first.statusCode, 200);
    const body = first.json();
    assert.equal(body.total, 16);
    assert.equal(body.page, 1);
    assert.equal(body.page_size, 10);
    assert.equal(body.items.length, 10);
    const created = body.items.map((o: { created_at: string }) => o.created_at);
    assert.deepEqual(created, [...created].sort().reverse());
    const last = (await get("/v1/partner/orders?page=2")).json();
    assert.equal(last.items.length, 6);
    const seen = new Set([...body.items, ...last.items].map((o: { id: number }) => o.id));
    assert.equal(seen.size, 16);
    const beyond = (await get("/v1/partner/orders?page=3")).json();
    assert.deepEqual(beyond, { items: [], total: 16, page: 3, page_size: 10 });
    assert.equal((await get("/v1/partner/orders?page_size=100")).json().items.length, 16);
    assert.equal((await get("/v1/partner/orders?page_size=1")).json().items.length, 1);
  });

  test("every page of every size is its slice of the whole list, the last one to its last order", async () => {
    // Offset, limit and total agree for every size: a last page of a single order, and pages past
    // the end (empty, with the same total). A first page reads the rows of the next of its constant
    // sizes, a page found on the index by a status or a source reads its ids first (orders-store.ts):
    // under each filter, with and without a range of dates.
    for (const filter of [
      "",
      "&partner_client_id=client-2",
      "&status=completed&source=bank",
      "&from_datetime=2026-11-01T03:00:00Z&to_datetime=2026-11-01T14:00:00Z",
      "&partner_client_id=client-1&status=completed&from_datetime=2026-11-01T02:30:00Z",
    ]) {
      const whole = (await get(`/v1/partner/orders?page_size=100${filter}`)).json();
      const ids = whole.items.map((o: { id: number }) => o.id);
      assert.equal(whole.total, ids.length);
      assert.ok(ids.length > 2, `${filter}: ${ids.length} orders`);
      for (let size = 1; size <= ids.length + 1; size++) {
        const pages = Math.ceil(ids.length / size);
        for (let page = 1; page <= pages + 1; page++) {
          const body = (await get(`/v1/partner/orders?page=${page}&page_size=${size}${filter}`)).json();
          const label = `page ${page} of size ${size}${filter}`;
          assert.equal(body.total, ids.length, label);
          assert.deepEqual(
            body.items.map((o: { id: number }) => o.id),
            ids.slice((page - 1) * size, page * size),
            label,
          );
        }
      }
    }
    // A filter nothing matches: no page holds an order.
    const none = (await get("/v1/partner/orders?partner_client_id=client-1&status=rejected")).json();
    assert.deepEqual(none, { items: [], total: 0, page: 1, page_size: 10 });
  });

  test("filters: client, repeatable status and source, inclusive datetime range", async () => {
    const c2 = (await get("/v1/partner/orders?partner_client_id=client-2&page_size=100")).json();
    assert.ok(c2.items.every((o: { partner_client_id: string }) => o.partner_client_id === "client-2"));
    assert.equal(c2.total, 8);
    const done = (await get("/v1/partner/orders?status=completed&status=rejected")).json();
    assert.equal(done.total, 16);
    assert.equal((await get("/v1/partner/orders?status=failed")).json().total, 0);
    assert.equal((await get("/v1/partner/orders?source=bank")).json().total, 16);
    assert.equal((await get("/v1/partner/orders?source=market&source=card")).json().total, 0);
    // Orders were placed one per hour from 2026-11-01T00:00Z; both bounds inclusive.
    const range = (
      await get("/v1/partner/orders?from_datetime=2026-11-01T02:00:00Z&to_datetime=2026-11-01T05:00:00Z")
    ).json();
    assert.equal(range.total, 4);
    const noOffset = (
      await get("/v1/partner/orders?from_datetime=2026-11-01T02:00:00&to_datetime=2026-11-01T05:00:00")
    ).json();
    assert.equal(noOffset.total, 4, "no offset is UTC");
    const withOffset = (await get("/v1/partner/orders?from_datetime=2026-11-01T06:00:00%2B04:00")).json();
    assert.equal(withOffset.total, 14, "06:00+04:00 is 02:00Z");
    const day = (await get("/v1/partner/orders?from_datetime=2026-11-02")).json();
    assert.equal(day.total, 0);
  });

  test("422 for unknown enums, bad datetimes and page bounds, with loc [query, name]", async () => {
    const cases: [string, string][] = [
      ["status=done", "status"],
      ["source=wire", "source"],
      ["from_datetime=yesterday", "from_datetime"],
      ["to_datetime=2026-02-30", "to_datetime"],
      ["to_datetime=2026-11-01T25:00:00Z", "to_datetime"],
      ["page=0", "page"],
      ["page=-1", "page"],
      ["page=x", "page"],
      ["page_size=0", "page_size"],
      ["page_size=101", "page_size"],
    ];
    for (const [q, name] of cases) {
      const res = await get(`/v1/partner/orders?${q}`);
      assert.equal(res.statusCode, 422, q);
      assert.deepEqual(res.json().msg_detail[0].loc.slice(0, 2), ["query", name], q);
      if (name.endsWith("datetime"))
        assert.equal(res.json().msg_detail[0].type, "datetime_from_date_parsing", q);
    }
  });

  test("a partner_client_id filter that is unknown or another partner's is 2008", async () => {
    const res = await get("/v1/partner/orders?partner_client_id=nobody");
    assert.equal(res.statusCode, 400);
    assert.equal(res.json().code, 2008);
    const other = await ctx.addPartner();
    const foreign = await get("/v1/partner/orders?partner_client_id=client-1", other);
    assert.equal(foreign.json().code, 2008);
    assert.deepEqual((await get("/v1/partner/orders", other)).json(), {
      items: [],
      total: 0,
      page: 1,
      page_size: 10,
    });
  });

  // Last: it changes the schema. The hot reads are prepared statements on each connection; a
  // migration that adds a column while the service runs must not break them.
  test("orders gains a column while the service runs: the order reads go on, answering the same", async () => {
    const urls = [
      `/v1/partner/orders/${ids[0]}`,
      "/v1/partner/orders/ref/o-1",
      "/v1/partner/orders?page_size=5",
      "/v1/partner/orders?status=completed&source=bank&partner_client_id=client-1",
      "/v1/partner/balances?partner_client_id=client-1",
      "/v1/partner/asset-pairs",
    ];
    const answers = async () => {
      const out: unknown[] = [];
      for (const url of urls) {
        const res = await get(url);
        assert.equal(res.statusCode, 200, `${url}: ${res.body}`);
        out.push(res.json());
      }
      return out;
    };
    // Sequential rounds: each connection of the pool that serves one prepares the statements.
    const before = await answers();
    for (let i = 0; i < 5; i++) assert.deepEqual(await answers(), before);
    await sql`ALTER TABLE orders ADD COLUMN note text`.execute(ctx.services.database.db);
    await sql`ALTER TABLE asset_pairs ADD COLUMN note text`.execute(ctx.services.database.db);
    for (let i = 0; i < 6; i++) assert.deepEqual(await answers(), before);
  });
});
