// docs/reference.md §3.2, §4.6, §7.2, §8 (pagination) and §1 rule 8 (isolation) on GET
// /v1/partner/clients/{id}/, PUT …/activation and GET /v1/partner/clients; docs/decisions.md
// "Responses the contract leaves open" and "Clients and documents" (list filters, trailing
// slash, inclusive datetimes).

import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { isoFromMs } from "../../db/time.ts";
import { clientPayload, clientsState, insertClient } from "../../testing/fixtures.ts";
import { startTestContext, type TestContext, type TestPartner } from "../../testing/harness.ts";
import { checkClientCanTransact } from "./client-check.ts";

describe("reading a client, the active flag, isolation", () => {
  let ctx: TestContext;
  let stranger: TestPartner;
  let record: Record<string, unknown>;

  before(async () => {
    ctx = await startTestContext();
    stranger = await ctx.addPartner();
    const res = await ctx.signed({ method: "POST", url: "/v1/partner/clients", body: clientPayload(1) });
    record = res.json().result;
  });
  after(async () => {
    await ctx.close();
  });

  test("GET …/{id}/ returns 200 {result} exactly as created; without the trailing slash 404", async () => {
    const res = await ctx.signed({ method: "GET", url: "/v1/partner/clients/client-1/" });
    assert.equal(res.statusCode, 200);
    assert.deepEqual(res.json(), { result: record });
    const bare = await ctx.signed({ method: "GET", url: "/v1/partner/clients/client-1" });
    assert.equal(bare.statusCode, 404);
    assert.deepEqual(bare.json(), { code: 404, msg: "Not Found", msg_detail: null });
    assert.equal(
      (await ctx.app.inject({ method: "GET", url: "/v1/partner/clients/client-1/" })).statusCode,
      401,
    );
  });

  test("2008 for an unknown client, and ids are exact (case, spaces)", async () => {
    for (const id of ["nobody", "CLIENT-1", "client-1%20", "client-10"]) {
      const res = await ctx.signed({ method: "GET", url: `/v1/partner/clients/${id}/` });
      assert.equal(res.statusCode, 400, id);
      assert.deepEqual(res.json(), { code: 2008, msg: "Invalid client ID", msg_detail: null });
    }
  });

  test("a partner_client_id with reserved characters is reachable percent-encoded", async () => {
    const pcid = "acme/42 ü?#";
    const created = await ctx.signed({
      method: "POST",
      url: "/v1/partner/clients",
      body: clientPayload(2, { partner_client_id: pcid }),
    });
    assert.equal(created.statusCode, 201, created.body);
    const res = await ctx.signed({ method: "GET", url: `/v1/partner/clients/${encodeURIComponent(pcid)}/` });
    assert.equal(res.statusCode, 200, res.body);
    assert.equal(res.json().result.partner_client_id, pcid);
  });

  test("PUT …/activation {active}: 204 without a body; the flag changes and nothing else; 2010 follows", async () => {
    const db = ctx.services.database.db;
    const off = await ctx.signed({
      method: "PUT",
      url: "/v1/partner/clients/client-1/activation",
      body: { active: false },
    });
    assert.equal(off.statusCode, 204);
    assert.equal(off.body, "");
    assert.equal(off.headers["content-type"], undefined);
    const read = (await ctx.signed({ method: "GET", url: "/v1/partner/clients/client-1/" })).json().result;
    assert.deepEqual(read, { ...record, active: false });
    assert.deepEqual(await checkClientCanTransact(db, ctx.partner.id, "client-1"), {
      ok: false,
      error: "client_deactivated",
    });
    // Idempotent, and reversible.
    for (const active of [false, true, true]) {
      const res = await ctx.signed({
        method: "PUT",
        url: "/v1/partner/clients/client-1/activation",
        body: { active },
      });
      assert.equal(res.statusCode, 204);
    }
    assert.deepEqual(
      (await ctx.signed({ method: "GET", url: "/v1/partner/clients/client-1/" })).json().result,
      record,
    );
    assert.equal((await checkClientCanTransact(db, ctx.partner.id, "client-1")).ok, true);
  });

  test("activation: a missing or non-boolean active is a 422; an unknown client 2008; nothing changes", async () => {
    const db = ctx.services.database.db;
    for (const [body, type] of [
      [{}, "missing"],
      [{ active: "false" }, "bool_type"],
      [{ active: 0 }, "bool_type"],
      [{ active: null }, "bool_type"],
    ] as const) {
      const before_ = await clientsState(db);
      const res = await ctx.signed({ method: "PUT", url: "/v1/partner/clients/client-1/activation", body });
      assert.equal(res.statusCode, 422, JSON.stringify(body));
      assert.deepEqual(
        res.json().msg_detail.map((d: { loc: unknown; type: string }) => [d.loc, d.type]),
        [[["body", "active"], type]],
      );
      assert.deepEqual(await clientsState(db), before_);
    }
    const before_ = await clientsState(db);
    const res = await ctx.signed({
      method: "PUT",
      url: "/v1/partner/clients/nobody/activation",
      body: { active: false },
    });
    assert.equal(res.json().code, 2008);
    const slash = await ctx.signed({
      method: "PUT",
      url: "/v1/partner/clients/client-1/activation/",
      body: { active: false },
    });
    assert.equal(slash.statusCode, 404);
    assert.deepEqual(await clientsState(db), before_);
  });

  test("another partner gets 2008 on every client route for this partner's client, and changes nothing", async () => {
    const db = ctx.services.database.db;
    const before_ = await clientsState(db);
    const update = (() => {
      const {
        partner_client_id: _p,
        account_type: _a,
        birth_date: _b,
        place_of_birth_id: _pob,
        ...rest
      } = clientPayload(1);
      return rest;
    })();
    const calls = [
      { method: "GET" as const, url: "/v1/partner/clients/client-1/" },
      { method: "PUT" as const, url: "/v1/partner/clients/client-1/", body: { ...update, name: "Hijacked" } },
      { method: "PUT" as const, url: "/v1/partner/clients/client-1/activation", body: { active: false } },
      { method: "GET" as const, url: "/v1/partner/clients/client-1/documents" },
      { method: "GET" as const, url: "/v1/partner/clients/client-1/documents/1" },
    ];
    for (const call of calls) {
      const res = await ctx.signed({ ...call, partner: stranger });
      assert.equal(res.statusCode, 400, `${call.method} ${call.url}: ${res.body}`);
      assert.equal(res.json().code, 2008, `${call.method} ${call.url}`);
    }
    const list = await ctx.signed({ method: "GET", url: "/v1/partner/clients", partner: stranger });
    assert.deepEqual(list.json(), { items: [], total: 0, page: 1, page_size: 10 });
    assert.deepEqual(await clientsState(db), before_);
  });

  test("statuses set by compliance show on reads; updates and activation work whatever the status", async () => {
    const db = ctx.services.database.db;
    const row = await insertClient(db, ctx.partner.id, 50, { status: "docs_under_review", active: false });
    const res = await ctx.signed({ method: "GET", url: `/v1/partner/clients/${row.partnerClientId}/` });
    assert.equal(res.json().result.status, "docs_under_review");
    assert.equal(res.json().result.verified_at, null);
    const on = await ctx.signed({
      method: "PUT",
      url: `/v1/partner/clients/${row.partnerClientId}/activation`,
      body: { active: true },
    });
    assert.equal(on.statusCode, 204);
    assert.deepEqual(await checkClientCanTransact(db, ctx.partner.id, row.partnerClientId), {
      ok: false,
      error: "client_not_verified",
    });
  });
});

describe("GET /v1/partner/clients", () => {
  let ctx: TestContext;
  /** created_at of client k, as the list returns it. */
  const createdAt = new Map<number, string>();
  const start = Date.UTC(2026, 10, 21, 9, 30, 0);

  before(async () => {
    ctx = await startTestContext();
    // Twelve clients, one per minute from `start`; every third is under review afterwards.
    for (let k = 1; k <= 12; k++) {
      ctx.clock.set(start + (k - 1) * 60_000 - 1);
      const res = await ctx.signed({ method: "POST", url: "/v1/partner/clients", body: clientPayload(k) });
      assert.equal(res.statusCode, 201, res.body);
      createdAt.set(k, res.json().result.created_at);
      if (k % 3 === 0) {
        const set = await ctx.adminRequest(
          "PUT",
          `/admin/partners/${ctx.partner.id}/clients/client-${k}/status`,
          { status: k % 2 === 0 ? "rejected" : "under_review", reason: "test set-up" },
        );
        assert.equal(set.statusCode, 200, set.body);
      }
    }
    ctx.clock.set(start + 3_600_000);
    // Another partner's clients never show.
    await insertClient(ctx.services.database.db, (await ctx.addPartner()).id, 99);
  });
  after(async () => {
    await ctx.close();
  });

  const list = async (query = "") => {
    const res = await ctx.signed({ method: "GET", url: `/v1/partner/clients${query}` });
    assert.equal(res.statusCode, 200, res.body);
    return res.json() as {
      items: { partner_client_id: string }[];
      total: number;
      page: number;
      page_size: number;
    };
  };
  const ids = (items: { partner_client_id: string }[]) =>
    items.map((c) => Number(c.partner_client_id.slice(7)));

  test("newest first; page 1 of 10 by default; total counts every match", async () => {
    const page = await list();
    assert.equal(page.total, 12);
    assert.equal(page.page, 1);
    assert.equal(page.page_size, 10);
    assert.deepEqual(ids(page.items), [12, 11, 10, 9, 8, 7, 6, 5, 4, 3]);
    const second = await list("?page=2");
    assert.deepEqual(ids(second.items), [2, 1]);
    assert.equal(second.total, 12);
    assert.deepEqual((await list("?page=3")).items, []);
    assert.deepEqual(ids((await list("?page=2&page_size=5")).items), [7, 6, 5, 4, 3]);
    assert.equal((await list("?page_size=100")).items.length, 12);
    assert.equal((await list("?page_size=1")).items.length, 1);
  });

  test("equal created_at: the larger id first", async () => {
    const saved = ctx.clock.nowMs();
    const db = ctx.services.database.db;
    const other = await ctx.addPartner();
    const a = await insertClient(db, other.id, 201);
    const b = await insertClient(db, other.id, 202);
    await db
      .updateTable("clients")
      .set({ created_at: isoFromMs(start) })
      .where("id", "in", [a.id, b.id])
      .execute();
    const res = await ctx.signed({ method: "GET", url: "/v1/partner/clients", partner: other });
    assert.deepEqual(
      res.json().items.map((c: { id: number }) => c.id),
      [b.id, a.id],
    );
    ctx.clock.set(saved);
  });

  test("status filter, repeatable", async () => {
    assert.deepEqual(ids((await list("?status=under_review")).items), [9, 3]);
    assert.deepEqual(ids((await list("?status=rejected&status=under_review")).items), [12, 9, 6, 3]);
    assert.equal((await list("?status=verified")).total, 8);
    assert.deepEqual(await list("?status=partially_verified"), {
      items: [],
      total: 0,
      page: 1,
      page_size: 10,
    });
  });

  test("from_datetime and to_datetime: inclusive, on created_at, microseconds exact; no offset means UTC", async () => {
    const t3 = createdAt.get(3)!;
    const t5 = createdAt.get(5)!;
    assert.deepEqual(ids((await list(`?from_datetime=${t3}&to_datetime=${t5}`)).items), [5, 4, 3]);
    // One microsecond inside either bound drops the client on it.
    const plus = (iso: string, us: number) => {
      const total = Date.parse(iso) * 1000 + Number(iso.slice(23, 26)) + us;
      return `${isoFromMs(Math.floor(total / 1000)).slice(0, 23)}${String(total % 1000).padStart(3, "0")}Z`;
    };
    assert.deepEqual(
      ids((await list(`?from_datetime=${plus(t3, 1)}&to_datetime=${plus(t5, -1)}`)).items),
      [4],
    );
    // Without an offset: UTC. With one: that instant.
    const noZone = t3.replace("Z", "");
    assert.deepEqual(ids((await list(`?from_datetime=${noZone}&to_datetime=${noZone}`)).items), [3]);
    const d = new Date(Date.parse(t3));
    const dubai = `${d.getUTCFullYear()}-${String(d.getUTCMonth() + 1).padStart(2, "0")}-${String(d.getUTCDate()).padStart(2, "0")}T${String(d.getUTCHours() + 4).padStart(2, "0")}:${String(d.getUTCMinutes()).padStart(2, "0")}:${String(d.getUTCSeconds()).padStart(2, "0")}.${t3.slice(20, 26)}%2B04:00`;
    assert.deepEqual(ids((await list(`?from_datetime=${dubai}&to_datetime=${dubai}`)).items), [3]);
    // A date alone is its midnight (UTC).
    assert.equal((await list("?from_datetime=2026-11-22")).total, 0);
    assert.equal((await list("?to_datetime=2026-11-22")).total, 12);
    assert.equal((await list(`?from_datetime=${t5}&to_datetime=${t3}`)).total, 0);
    assert.deepEqual(ids((await list(`?from_datetime=${t3}&status=under_review`)).items), [9, 3]);
  });

  test("invalid datetime, status, page or page_size: 422 at [query, name]; page 1 and page_size 1..100 pass", async () => {
    const cases: [string, (string | number)[], string][] = [
      ["from_datetime=yesterday", ["query", "from_datetime"], "datetime_from_date_parsing"],
      ["to_datetime=2026-02-30T00:00:00Z", ["query", "to_datetime"], "datetime_from_date_parsing"],
      ["from_datetime=2026-11-21T25:00:00Z", ["query", "from_datetime"], "datetime_from_date_parsing"],
      ["to_datetime=", ["query", "to_datetime"], "datetime_from_date_parsing"],
      ["status=approved", ["query", "status", 0], "enum"],
      ["status=verified&status=VERIFIED", ["query", "status", 1], "enum"],
      ["page=0", ["query", "page"], "greater_than_equal"],
      ["page=-1", ["query", "page"], "greater_than_equal"],
      ["page=1.5", ["query", "page"], "int_parsing"],
      ["page=abc", ["query", "page"], "int_parsing"],
      ["page_size=0", ["query", "page_size"], "greater_than_equal"],
      ["page_size=101", ["query", "page_size"], "less_than_equal"],
      ["page_size=x", ["query", "page_size"], "int_parsing"],
    ];
    for (const [query, loc, type] of cases) {
      const res = await ctx.signed({ method: "GET", url: `/v1/partner/clients?${query}` });
      assert.equal(res.statusCode, 422, query);
      assert.deepEqual(
        res.json().msg_detail.map((e: { loc: unknown; type: string }) => [e.loc, e.type]),
        [[loc, type]],
        query,
      );
    }
    assert.equal((await list("?page=1&page_size=100")).page_size, 100);
    assert.equal((await list("?page_size=1")).page_size, 1);
  });

  test("every item has the client shape", async () => {
    const page = await list("?page_size=1");
    const read = await ctx.signed({ method: "GET", url: "/v1/partner/clients/client-12/" });
    assert.deepEqual(page.items[0], read.json().result);
  });
});
