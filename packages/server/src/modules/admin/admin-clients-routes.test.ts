// docs/reference.md §3.1 (statuses other than verified come from the compliance team), §3.2 and §7.3 (2009,
// 2010 through the shared client check); docs/decisions.md "Operator side": the admin API's client
// routes.

import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { isoFromMs } from "../../db/time.ts";
import { clientPayload, clientsState } from "../../testing/fixtures.ts";
import { startTestContext, type TestContext } from "../../testing/harness.ts";
import { checkClientCanTransact } from "../clients/client-check.ts";

describe("admin API: clients", () => {
  let ctx: TestContext;

  before(async () => {
    ctx = await startTestContext();
  });
  after(async () => {
    await ctx.close();
  });

  /**
   * A client of the test's own, created through the partner API: a test that changes its status
   * or flag leaves nothing another test reads, whatever the order.
   */
  async function ownClient(n: number) {
    const res = await ctx.signed({ method: "POST", url: "/v1/partner/clients", body: clientPayload(n) });
    assert.equal(res.statusCode, 201, res.body);
    const pcid = `client-${n}`;
    const created: Record<string, unknown> = res.json().result;
    return { pcid, base: `/admin/partners/${ctx.partner.id}/clients/${pcid}`, created };
  }
  const partnerView = async (pcid: string) =>
    (await ctx.signed({ method: "GET", url: `/v1/partner/clients/${pcid}/` })).json().result;

  test("GET shows the client as the partner sees it", async () => {
    const { base, created } = await ownClient(1);
    const res = await ctx.adminRequest("GET", base);
    assert.equal(res.statusCode, 200);
    assert.deepEqual(res.json(), { result: created });
  });

  test("PUT …/status: every status can be set; verified_at is null unless verified; 2009 follows", async () => {
    const { pcid, base, created } = await ownClient(2);
    const db = ctx.services.database.db;
    for (const status of [
      "unverified",
      "under_review",
      "partially_verified",
      "docs_under_review",
      "not_supported",
      "under_age",
      "rejected",
    ]) {
      const res = await ctx.adminRequest("PUT", `${base}/status`, { status, reason: "test set-up" });
      assert.equal(res.statusCode, 200, res.body);
      assert.equal(res.json().result.status, status);
      assert.equal(res.json().result.verified_at, null);
      assert.deepEqual(await partnerView(pcid), { ...created, status, verified_at: null });
      assert.deepEqual(await checkClientCanTransact(db, ctx.partner.id, pcid), {
        ok: false,
        error: "client_not_verified",
      });
    }
    ctx.clock.advance(10_000);
    const back = await ctx.adminRequest("PUT", `${base}/status`, {
      status: "verified",
      reason: "test set-up",
    });
    assert.equal(back.json().result.verified_at, isoFromMs(ctx.clock.nowMs()));
    // Verified again: verified_at is kept.
    ctx.clock.advance(10_000);
    const again = await ctx.adminRequest("PUT", `${base}/status`, {
      status: "verified",
      reason: "test set-up",
    });
    assert.equal(again.json().result.verified_at, back.json().result.verified_at);
    assert.equal((await checkClientCanTransact(db, ctx.partner.id, pcid)).ok, true);
  });

  test("PUT …/active: 2010 follows; 2009 comes before 2010", async () => {
    const { pcid, base } = await ownClient(3);
    const db = ctx.services.database.db;
    const off = await ctx.adminRequest("PUT", `${base}/active`, { active: false, reason: "test set-up" });
    assert.equal(off.statusCode, 200);
    assert.equal(off.json().result.active, false);
    assert.equal((await partnerView(pcid)).active, false);
    assert.deepEqual(await checkClientCanTransact(db, ctx.partner.id, pcid), {
      ok: false,
      error: "client_deactivated",
    });
    await ctx.adminRequest("PUT", `${base}/status`, { status: "rejected", reason: "test set-up" });
    assert.deepEqual(await checkClientCanTransact(db, ctx.partner.id, pcid), {
      ok: false,
      error: "client_not_verified",
    });
    await ctx.adminRequest("PUT", `${base}/status`, { status: "verified", reason: "test set-up" });
    const on = await ctx.adminRequest("PUT", `${base}/active`, { active: true, reason: "test set-up" });
    assert.equal(on.json().result.active, true);
    assert.equal((await checkClientCanTransact(db, ctx.partner.id, pcid)).ok, true);
  });

  test("unknown partner or client: 404; bad bodies: 422; no token: 401; nothing changes", async () => {
    const { pcid, base } = await ownClient(4);
    const db = ctx.services.database.db;
    const before_ = await clientsState(db);
    const other = await ctx.addPartner();
    for (const url of [
      `/admin/partners/${other.id}/clients/${pcid}`,
      `/admin/partners/${ctx.partner.id}/clients/nobody`,
      `/admin/partners/not-a-uuid/clients/${pcid}`,
    ]) {
      for (const [method, suffix, body] of [
        ["GET", "", undefined],
        ["PUT", "/status", { status: "rejected", reason: "test set-up" }],
        ["PUT", "/active", { active: false, reason: "test set-up" }],
      ] as const) {
        const res = await ctx.adminRequest(method, `${url}${suffix}`, body);
        assert.equal(res.statusCode, 404, `${method} ${url}${suffix}`);
        assert.deepEqual(res.json(), { code: 404, msg: "Not Found", msg_detail: null });
      }
    }
    for (const [suffix, body, loc] of [
      ["/status", { status: "approved" }, ["body", "status"]],
      ["/status", {}, ["body", "status"]],
      ["/status", { status: "verified", note: "x" }, ["body", "note"]],
      ["/active", { active: "yes" }, ["body", "active"]],
    ] as const) {
      const res = await ctx.adminRequest("PUT", `${base}${suffix}`, body);
      assert.equal(res.statusCode, 422, JSON.stringify(body));
      assert.deepEqual(res.json().msg_detail[0].loc, loc);
    }
    const unauth = await ctx.admin.inject({
      method: "PUT",
      url: `${base}/status`,
      payload: { status: "rejected" },
    });
    assert.equal(unauth.statusCode, 401);
    // The partner API offers no way to change the status.
    const viaPartner = await ctx.signed({
      method: "PUT",
      url: `/v1/partner/clients/${pcid}/status`,
      body: { status: "rejected" },
    });
    assert.equal(viaPartner.statusCode, 404);
    assert.deepEqual(await clientsState(db), before_);
  });
});
