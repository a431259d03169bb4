// Events (docs/reference.md, "Events"): every change a partner can learn of writes one event in
// its own transaction, with the resource as the partner API returned it; a change that fails
// writes none; the feed pages by cursor, filters by type and client, and keeps events for the
// retention period only.

import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { sql } from "kysely";
import { feedSettled } from "../../testing/events.ts";
import { clientPayload, multipartBody, sampleFile } from "../../testing/fixtures.ts";
import { onPostgres, startTestContext, type TestContext, type TestPartner } from "../../testing/harness.ts";
import { eventId, eventPosition } from "./event-views.ts";

interface Ev {
  id: string;
  type: string;
  created_at: string;
  partner_client_id: string;
  data: Record<string, unknown>;
}
interface Feed {
  items: Ev[];
  next_cursor: string | null;
  has_more: boolean;
}

describe("events", () => {
  let ctx: TestContext;
  let dataDir: string;
  let stranger: TestPartner;
  let refN = 0;
  before(async () => {
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "cp-events-"));
    ctx = await startTestContext({ env: { DATA_DIR: dataDir } });
    stranger = await ctx.addPartner();
    await ctx.adminRequest("PUT", "/admin/pairs/BTC-AED/price", {
      buy: "350000",
      sell: "349000",
      reason: "test set-up",
    });
  });
  after(async () => {
    await ctx.close();
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  async function feed(query = "", partner = ctx.partner): Promise<Feed> {
    await feedSettled(ctx.services.database.db);
    const res = await ctx.signed({ method: "GET", url: `/v1/partner/events${query}`, partner });
    assert.equal(res.statusCode, 200, res.body);
    return res.json();
  }
  /** Every event of the partner, following the cursor page by page. */
  async function all(query = "", partner = ctx.partner): Promise<Ev[]> {
    const out: Ev[] = [];
    let cursor: string | null = null;
    for (;;) {
      const sep = query === "" ? "?" : `?${query}&`;
      const page: Feed = await feed(`${sep}limit=100${cursor === null ? "" : `&after=${cursor}`}`, partner);
      out.push(...page.items);
      if (!page.has_more) return out;
      cursor = page.next_cursor;
    }
  }
  const count = async () =>
    Number(
      (await sql<{ n: string }>`SELECT count(*)::text AS n FROM events`.execute(ctx.services.database.db))
        .rows[0]!.n,
    );
  const fund = (kind: "deposits" | "withdrawals", client: string, amount: string, ref = `r-${++refN}`) =>
    ctx.signed({
      method: "POST",
      url: `/v1/partner/${kind}`,
      body: { partner_client_id: client, asset_id: "AED", amount, partner_order_ref: ref },
    });

  test("each change writes one event holding the resource exactly as the API returned it", async () => {
    const start = (await all()).length;
    const shown: unknown[] = [];
    /** The client as GET shows it right after a change. */
    const snap = async () => {
      const res = await ctx.signed({ method: "GET", url: "/v1/partner/clients/client-1/" });
      assert.equal(res.statusCode, 200);
      shown.push(res.json().result);
    };
    const created = await ctx.signed({ method: "POST", url: "/v1/partner/clients", body: clientPayload(1) });
    assert.equal(created.statusCode, 201, created.body);
    await snap();
    const updated = await ctx.signed({
      method: "PUT",
      url: "/v1/partner/clients/client-1/",
      body: {
        ...clientPayload(1, { name: "Renamed" }),
        partner_client_id: undefined,
        account_type: undefined,
        birth_date: undefined,
        place_of_birth_id: undefined,
      },
    });
    assert.equal(updated.statusCode, 200, updated.body);
    await snap();
    const deactivated = await ctx.signed({
      method: "PUT",
      url: "/v1/partner/clients/client-1/activation",
      body: { active: false },
    });
    assert.equal(deactivated.statusCode, 204, deactivated.body);
    await snap();
    const reactivated = await ctx.adminRequest(
      "PUT",
      `/admin/partners/${ctx.partner.id}/clients/client-1/active`,
      { active: true, reason: "test set-up" },
    );
    assert.equal(reactivated.statusCode, 200, reactivated.body);
    await snap();
    const reviewed = await ctx.adminRequest(
      "PUT",
      `/admin/partners/${ctx.partner.id}/clients/client-1/status`,
      { status: "under_review", reason: "test set-up" },
    );
    assert.equal(reviewed.statusCode, 200, reviewed.body);
    await snap();
    const verified = await ctx.adminRequest(
      "PUT",
      `/admin/partners/${ctx.partner.id}/clients/client-1/status`,
      { status: "verified", reason: "test set-up" },
    );
    assert.equal(verified.statusCode, 200, verified.body);
    await snap();
    const deposit = await fund("deposits", "client-1", "1000");
    assert.equal(deposit.statusCode, 200, deposit.body);
    const { body, contentType } = multipartBody([
      { name: "type", data: "government_id" },
      { name: "front_file", filename: "id.png", contentType: "image/png", data: sampleFile("png") },
    ]);
    const upload = await ctx.signed({
      method: "POST",
      url: "/v1/partner/clients/client-1/documents",
      body,
      headers: { "content-type": contentType },
    });
    assert.equal(upload.statusCode, 201, upload.body);

    const events = (await all()).slice(start);
    assert.deepEqual(
      events.map((e) => e.type),
      [
        "client.created",
        "client.updated",
        "client.activation_changed",
        "client.activation_changed",
        "client.status_changed",
        "client.status_changed",
        "order.completed",
        "document.created",
      ],
    );
    const results = [...shown, deposit.json().result] as Record<string, unknown>[];
    assert.deepEqual(results[0], created.json().result);
    assert.deepEqual(results[1], updated.json().result);
    for (const [i, result] of results.entries()) assert.deepEqual(events[i]!.data, result, events[i]!.type);
    // Key order too: the data is the API's record, not a re-sorted copy.
    assert.deepEqual(Object.keys(events[0]!.data), Object.keys(results[0]!));
    const doc = upload.json().result;
    const docEvent = events[7]!.data;
    assert.equal(docEvent.id, doc.id);
    assert.equal(docEvent.type, doc.type);
    assert.equal(docEvent.created_at, doc.created_at);
    assert.match(
      String(docEvent.front_file),
      /^http:\/\/localhost(?::\d+)?\/v1\/files\/[A-Za-z0-9_-]{43}\?expires=/,
    );
    for (const e of events) {
      assert.equal(e.partner_client_id, "client-1");
      assert.match(e.id, /^evt_[A-Za-z0-9_-]{22}$/);
    }
    assert.equal(events[6]!.created_at, results[6]!.created_at);
    assert.equal(new Set(events.map((e) => e.id)).size, events.length);
  });

  test("a rejected execution is an order too: order.rejected, in the execution's transaction", async () => {
    const c = await ctx.signed({ method: "POST", url: "/v1/partner/clients", body: clientPayload(2) });
    assert.equal(c.statusCode, 201);
    assert.equal((await fund("deposits", "client-2", "1000")).statusCode, 200);
    const q = await ctx.signed({
      method: "POST",
      url: "/v1/partner/quotes",
      body: { partner_client_id: "client-2", asset_pair: "BTC-AED", side: "buy", base_amount: "0.002" },
    });
    assert.equal(q.statusCode, 200, q.body);
    assert.equal((await fund("withdrawals", "client-2", "900")).statusCode, 200);
    const cursor = (await feed("?partner_client_id=client-2&limit=100")).next_cursor;
    const res = await ctx.signed({
      method: "POST",
      url: "/v1/partner/quotes/execute",
      body: { partner_client_id: "client-2", token: q.json().result.token, partner_order_ref: "late" },
    });
    assert.equal(res.statusCode, 200, res.body);
    assert.equal(res.json().result.status, "rejected");
    const page = await feed(`?partner_client_id=client-2&after=${cursor}`);
    assert.deepEqual(
      page.items.map((e) => [e.type, e.data]),
      [["order.rejected", res.json().result]],
    );
  });

  test("a change that fails writes no event, and a change to the same value writes none", async () => {
    const before = await count();
    // A duplicate client, a duplicate reference, a withdrawal the balance does not cover.
    const dup = await ctx.signed({ method: "POST", url: "/v1/partner/clients", body: clientPayload(1) });
    assert.equal(dup.statusCode, 400);
    const ref = `dup-${++refN}`;
    assert.equal((await fund("deposits", "client-1", "1", ref)).statusCode, 200);
    const afterOne = await count();
    assert.equal(afterOne, before + 1);
    assert.equal((await fund("deposits", "client-1", "1", ref)).json().code, 2020);
    assert.equal((await fund("withdrawals", "client-1", "999999")).json().code, 3005);
    // The status it already has, and the active flag it already has.
    const same = await ctx.adminRequest("PUT", `/admin/partners/${ctx.partner.id}/clients/client-1/status`, {
      status: "verified",
      reason: "test set-up",
    });
    assert.equal(same.statusCode, 200);
    const active = await ctx.signed({
      method: "PUT",
      url: "/v1/partner/clients/client-1/activation",
      body: { active: true },
    });
    assert.equal(active.statusCode, 204);
    assert.equal(await count(), afterOne);
  });

  test("the feed pages by cursor, filters by type and client, and shows a partner its own events only", async () => {
    for (let i = 0; i < 5; i++) assert.equal((await fund("deposits", "client-2", "1")).statusCode, 200);
    const everything = await all();
    assert.ok(everything.length >= 15);
    // Pages of 2 read the same sequence.
    const paged: Ev[] = [];
    let cursor: string | null = null;
    for (;;) {
      const page: Feed = await feed(`?limit=2${cursor === null ? "" : `&after=${cursor}`}`);
      assert.ok(page.items.length <= 2);
      paged.push(...page.items);
      if (!page.has_more) {
        assert.equal(page.next_cursor, everything.at(-1)!.id);
        break;
      }
      cursor = page.next_cursor;
    }
    assert.deepEqual(paged, everything);
    // After the last event: nothing yet, and the cursor stays where it was.
    const tail = await feed(`?after=${everything.at(-1)!.id}`);
    assert.deepEqual(tail, { items: [], next_cursor: everything.at(-1)!.id, has_more: false });
    // Resuming from any event gives the rest.
    const mid = everything[5]!.id;
    const rest = (await feed(`?after=${mid}&limit=100`)).items;
    assert.deepEqual(rest, everything.slice(6));
    // Filters.
    const orders = await all("type=order.completed&type=order.rejected");
    assert.deepEqual(
      orders,
      everything.filter((e) => e.type.startsWith("order.")),
    );
    const two = await all("partner_client_id=client-2");
    assert.deepEqual(
      two,
      everything.filter((e) => e.partner_client_id === "client-2"),
    );
    // Another partner sees none of them, and cannot filter on this partner's client.
    assert.deepEqual(await feed("", stranger), { items: [], next_cursor: null, has_more: false });
    const foreign = await ctx.signed({
      method: "GET",
      url: "/v1/partner/events?partner_client_id=client-1",
      partner: stranger,
    });
    assert.equal(foreign.statusCode, 400);
    assert.equal(foreign.json().code, 2008);
  });

  test("bad cursors, limits and types are a 422 in the contract's shape", async () => {
    for (const [query, loc] of [
      ["after=evt_nope", "after"],
      ["after=123", "after"],
      // A position past PostgreSQL's bigint (the fuzz test's find): refused, never a 500.
      ["after=evt_aaaaaaablnaaaaaaaaaafg", "after"],
      [`after=${eventId({ txid: 2n ** 63n, seq: 1n })}`, "after"],
      ["limit=0", "limit"],
      ["limit=101", "limit"],
      ["limit=1.5", "limit"],
      ["type=order.created", "type"],
    ] as const) {
      const res = await ctx.signed({ method: "GET", url: `/v1/partner/events?${query}` });
      assert.equal(res.statusCode, 422, query);
      const detail = res.json().msg_detail as { loc: string[] }[];
      assert.ok(
        detail.some((d) => d.loc[0] === "query" && d.loc[1] === loc),
        `${query}: ${res.body}`,
      );
    }
  });

  test("event ids are positions: they round-trip, and only the canonical spelling is one", () => {
    const p = { txid: 12_345_678_901n, seq: 42n };
    const id = eventId(p);
    assert.deepEqual(eventPosition(id), p);
    assert.equal(eventPosition(`${id.slice(0, -1)}${id.at(-1) === "A" ? "B" : "A"}`)?.seq === 42n, false);
    assert.equal(eventPosition("evt_"), null);
    // Past bigint, what the store keeps, an id names no event.
    assert.equal(eventPosition(eventId({ txid: 2n ** 63n, seq: 1n })), null);
    assert.equal(eventPosition(eventId({ txid: 1n, seq: 2n ** 64n - 1n })), null);
    assert.deepEqual(eventPosition(eventId({ txid: 2n ** 63n - 1n, seq: 1n })), {
      txid: 2n ** 63n - 1n,
      seq: 1n,
    });
    assert.equal(eventPosition(`x${id.slice(1)}`), null);
  });

  test("housekeeping deletes events older than the retention period (30 days by default)", async () => {
    const db = ctx.services.database.db;
    const total = await count();
    assert.ok(total > 0);
    // Age all but the newest event past 30 days.
    const newest = (await all()).at(-1)!;
    const pos = eventPosition(newest.id)!;
    await sql`UPDATE events SET created_at = ${new Date(ctx.clock.nowMs() - 31 * 86_400_000).toISOString()}::timestamptz
              WHERE seq <> ${pos.seq.toString()}::bigint`.execute(db);
    assert.equal(await ctx.services.events.purge(), total - 1);
    assert.deepEqual(await all(), [newest]);
    // A cursor from before the purge still reads on.
    assert.equal(ctx.config.eventRetentionDays, 30);
  });
});

describe("events: retention is configurable, and never under 30 days", () => {
  test("EVENT_RETENTION_DAYS below 30 is refused at start", async () => {
    const { loadConfig } = await import("../../config/config.ts");
    assert.throws(
      () => loadConfig({ EVENT_RETENTION_DAYS: "7" }),
      /EVENT_RETENTION_DAYS: expected an integer from 30 to 3650/,
    );
    assert.equal(loadConfig({ EVENT_RETENTION_DAYS: "90" }).eventRetentionDays, 90);
  });
});

if (onPostgres) {
  describe("events: the feed never shows a later event before an earlier one (PostgreSQL)", () => {
    let ctx: TestContext;
    before(async () => {
      ctx = await startTestContext();
    });
    after(async () => {
      await ctx.close();
    });

    test("an event of a transaction still in flight holds back every later one until it ends", async () => {
      const db = ctx.services.database.db;
      const c = await ctx.signed({ method: "POST", url: "/v1/partner/clients", body: clientPayload(1) });
      assert.equal(c.statusCode, 201);
      // Another test file's open transaction may hold the feed back: wait until it serves what is
      // committed (the same wait as after the slow writer, below).
      await feedSettled(db);
      const seen = (await ctx.signed({ method: "GET", url: "/v1/partner/events" })).json() as Feed;
      assert.equal(seen.items.length, 1);
      const cursor = seen.next_cursor!;
      // A slow writer: its transaction takes its id (and an event) first and commits last.
      let release!: () => void;
      const released = new Promise<void>((r) => (release = r));
      let begun!: () => void;
      const hasBegun = new Promise<void>((r) => (begun = r));
      const slow = db.transaction().execute(async (tx) => {
        await sql`UPDATE clients SET name = 'slow' WHERE partner_client_id = 'client-1'`.execute(tx);
        await sql`INSERT INTO events (partner_id, client_id, type, data)
                  SELECT partner_id, client_id, 'client.updated', data FROM events
                  WHERE type = 'client.created'`.execute(tx);
        begun();
        await released;
      });
      await hasBegun;
      try {
        // A deposit commits while the slow transaction is open: it is not served yet.
        const dep = await ctx.signed({
          method: "POST",
          url: "/v1/partner/deposits",
          body: { partner_client_id: "client-1", asset_id: "AED", amount: "5", partner_order_ref: "fast" },
        });
        assert.equal(dep.statusCode, 200, dep.body);
        const held = (await ctx.signed({ method: "GET", url: `/v1/partner/events?after=${cursor}` })).json();
        assert.deepEqual(held, { items: [], next_cursor: cursor, has_more: false });
      } finally {
        release();
        await slow;
      }
      await feedSettled(db);
      const now = (
        await ctx.signed({ method: "GET", url: `/v1/partner/events?after=${cursor}` })
      ).json() as Feed;
      assert.deepEqual(
        now.items.map((e) => e.type),
        ["client.updated", "order.completed"],
      );
    });
  });
}
