// docs/decisions.md "Audit trail": every state-changing operator action is recorded in the
// transaction of the change (who, when, what, before and after, the reason), the reason is required
// of operators for status changes, deactivations and price pins, the trail is append-only in the
// database, and GET /admin/audit reads it filtered and paged.

import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { sql } from "kysely";
import { clientPayload } from "../../testing/fixtures.ts";
import { startTestContext, type TestContext } from "../../testing/harness.ts";

const password = "correct horse battery staple";

describe("the audit trail", () => {
  let ctx: TestContext;
  let seq = 0;

  before(async () => {
    ctx = await startTestContext();
  });
  after(async () => {
    await ctx.close();
  });

  async function operatorSession(role: "viewer" | "compliance" | "admin") {
    seq++;
    const email = `auditor${seq}@broker.example`;
    const created = await ctx.adminRequest("POST", "/admin/operators", { email, role, password });
    assert.equal(created.statusCode, 201, created.body);
    const res = await ctx.admin.inject({
      method: "POST",
      url: "/admin/session",
      payload: { email, password },
    });
    assert.equal(res.statusCode, 200, res.body);
    const cookie = String(res.headers["set-cookie"]).split(";")[0]!;
    const csrf: string = res.json().result.csrf_token;
    return {
      id: created.json().result.id as string,
      email,
      call: (method: "GET" | "PUT" | "POST" | "DELETE", url: string, body?: unknown) =>
        ctx.admin.inject({
          method,
          url,
          headers: { cookie, "x-csrf-token": csrf },
          ...(body === undefined ? {} : { payload: body as object }),
        }),
    };
  }

  async function newClient(n: number) {
    const res = await ctx.signed({ method: "POST", url: "/v1/partner/clients", body: clientPayload(n) });
    assert.equal(res.statusCode, 201, res.body);
    return { pcid: `client-${n}`, base: `/admin/partners/${ctx.partner.id}/clients/client-${n}` };
  }

  const count = async () =>
    Number(
      (
        await ctx.services.database.db
          .selectFrom("audit_log")
          .select((eb) => eb.fn.countAll<string>().as("n"))
          .executeTakeFirstOrThrow()
      ).n,
    );
  const client = async (pcid: string) =>
    ctx.services.database.db
      .selectFrom("clients")
      .select(["status", "active", "verified_at"])
      .where("partner_id", "=", ctx.partner.id)
      .where("partner_client_id", "=", pcid)
      .executeTakeFirstOrThrow();

  test("a status change by an operator is one entry: who, when, what, before and after, and the reason", async () => {
    const op = await operatorSession("compliance");
    const { pcid, base } = await newClient(1);
    const was = await client(pcid);
    ctx.clock.advance(1_000);
    const res = await op.call("PUT", `${base}/status`, { status: "rejected", reason: "forged passport" });
    assert.equal(res.statusCode, 200, res.body);
    const list = await ctx.adminRequest(
      "GET",
      `/admin/audit?target_type=client&target_id=${ctx.partner.id}/${pcid}`,
    );
    assert.equal(list.statusCode, 200, list.body);
    const page = list.json();
    assert.equal(page.total, 1);
    const entry = page.items[0];
    assert.equal(typeof entry.id, "number");
    assert.deepEqual(
      { ...entry, id: 0 },
      {
        id: 0,
        at: new Date(ctx.clock.nowMs()).toISOString().replace("Z", "000Z"),
        actor: { kind: "operator", id: op.id, email: op.email },
        action: "client.status",
        target_type: "client",
        target_id: `${ctx.partner.id}/${pcid}`,
        before: { status: was.status, verified_at: was.verified_at },
        after: { status: "rejected", verified_at: null },
        reason: "forged passport",
      },
    );
  });

  test("every actor, bearer token included, must give a reason for status changes, activations, partner disabling and price pins; refused, nothing changes", async () => {
    const compliance = await operatorSession("compliance");
    const admin = await operatorSession("admin");
    const { pcid, base } = await newClient(2);
    const other = await ctx.addPartner({ name: "Audit partner" });
    const before = { entries: await count(), client: await client(pcid) };
    const price = async () =>
      ctx.services.database.db
        .selectFrom("asset_pairs")
        .select(["buy", "sell", "price_pinned"])
        .where("id", "=", "BTC-AED")
        .executeTakeFirstOrThrow();
    const priceBefore = await price();
    const token = {
      call: (method: "PUT", url: string, body: unknown) => ctx.adminRequest(method, url, body),
    };
    for (const [who, method, url, body] of [
      [compliance, "PUT", `${base}/status`, { status: "rejected" }],
      [token, "PUT", `${base}/status`, { status: "rejected" }],
      [token, "PUT", `${base}/active`, { active: false, reason: " " }],
      [token, "PUT", `/admin/partners/${other.id}/active`, { active: false }],
      [token, "PUT", "/admin/pairs/BTC-AED/price", { buy: "100", sell: "90" }],
      [compliance, "PUT", `${base}/status`, { status: "rejected", reason: "   " }],
      [compliance, "PUT", `${base}/active`, { active: false }],
      [admin, "PUT", `/admin/partners/${other.id}/active`, { active: false }],
      [admin, "PUT", "/admin/pairs/BTC-AED/price", { buy: "100", sell: "90" }],
      [admin, "PUT", `/admin/operators/${compliance.id}/active`, { active: false, reason: "" }],
      // Nothing a reader of the trail would see: zero-width characters, a byte-order mark, controls.
      [token, "PUT", `${base}/active`, { active: false, reason: "\u200b" }],
      [admin, "PUT", `/admin/partners/${other.id}/active`, { active: false, reason: " \u200d\ufeff\u2060 " }],
      [compliance, "PUT", `${base}/status`, { status: "rejected", reason: "\u00ad\u3000\u0007" }],
    ] as const) {
      const res = await who.call(method, url, body);
      assert.equal(res.statusCode, 422, `${url}: ${res.body}`);
      assert.deepEqual(res.json().msg_detail, [
        {
          loc: ["body", "reason"],
          msg: "A reason is required for this change (it goes on the audit trail)",
          type: "missing",
        },
      ]);
    }
    assert.equal(await count(), before.entries);
    assert.deepEqual(await client(pcid), before.client);
    assert.deepEqual(await price(), priceBefore);
    const partnerRow = await ctx.services.partners.show(other.id);
    assert.ok(partnerRow.ok && partnerRow.partner.active);
    // Unblocking needs one too (a client blocked for a reason is unblocked for one).
    assert.equal((await compliance.call("PUT", `${base}/active`, { active: true })).statusCode, 422);
    assert.equal(
      (await token.call("PUT", `/admin/partners/${other.id}/active`, { active: true })).statusCode,
      422,
    );
    assert.equal(await count(), before.entries);
    assert.equal(
      (await compliance.call("PUT", `${base}/active`, { active: true, reason: "documents received" }))
        .statusCode,
      200,
    );
    // With a reason each goes through, and is on the trail with it.
    const pinned = await admin.call("PUT", "/admin/pairs/BTC-AED/price", {
      buy: "100",
      sell: "90",
      reason: "feed outage",
    });
    assert.equal(pinned.statusCode, 200, pinned.body);
    const entry = (await ctx.adminRequest("GET", "/admin/audit?action=pair.price_pin&page_size=1")).json()
      .items[0];
    assert.equal(entry.reason, "feed outage");
    assert.equal(entry.before.price_pinned, false);
    assert.deepEqual(
      [entry.after.buy, entry.after.sell, entry.after.price_pinned],
      ["100.00000000", "90.00000000", true],
    );
  });

  test("the bearer token is recorded as the token, with its reason", async () => {
    const { base } = await newClient(3);
    const res = await ctx.adminRequest("PUT", `${base}/status`, {
      status: "under_review",
      reason: "nightly script",
    });
    assert.equal(res.statusCode, 200, res.body);
    const entry = (
      await ctx.adminRequest("GET", "/admin/audit?actor=token&action=client.status&page_size=1")
    ).json().items[0];
    assert.deepEqual(entry.actor, { kind: "token", id: null, email: null });
    assert.equal(entry.reason, "nightly script");
    assert.deepEqual(entry.after, { status: "under_review", verified_at: null });
  });

  test("every kind of operator change writes exactly one entry", async () => {
    const admin = await operatorSession("admin");
    const partnerId = ctx.partner.id;
    const { base } = await newClient(4);
    const created = await admin.call("POST", "/admin/partners", {
      name: "Audited partner",
      public_key_pem: null,
      allowed_ips: [],
    });
    assert.equal(created.statusCode, 201, created.body);
    const newPartner = created.json().result.id as string;
    const steps: [string, "PUT" | "POST" | "DELETE", string, unknown][] = [
      ["client.status", "PUT", `${base}/status`, { status: "verified", reason: "checked" }],
      ["client.active", "PUT", `${base}/active`, { active: false, reason: "fraud alert" }],
      ["partner.allowed_ips", "PUT", `/admin/partners/${newPartner}/ips`, { allowed_ips: ["10.0.0.0/8"] }],
      [
        "partner.active",
        "PUT",
        `/admin/partners/${newPartner}/active`,
        { active: false, reason: "contract ended" },
      ],
      [
        "partner.key_replace",
        "PUT",
        `/admin/partners/${newPartner}/key`,
        { public_key_pem: ctx.partner.publicKeyPem },
      ],
      ["partner.fees", "PUT", `/admin/partners/${partnerId}/fees`, { vat_percentage: "5" }],
      ["partner.pair_settings", "PUT", `/admin/partners/${partnerId}/pairs/BTC-AED`, { available: true }],
      ["asset.update", "PUT", "/admin/assets/AED", { published: true }],
      ["pair.update", "PUT", "/admin/pairs/BTC-AED", { lifetime_s: 30 }],
      ["pair.price_pin", "PUT", "/admin/pairs/BTC-AED/price", { buy: "101", sell: "99", reason: "manual" }],
      ["operator.role", "PUT", `/admin/operators/${admin.id}/role`, { role: "admin" }],
    ];
    for (const [action, method, url, body] of steps) {
      const before = await count();
      const res = await admin.call(method, url, body);
      assert.ok(res.statusCode < 300, `${url}: ${res.statusCode} ${res.body}`);
      assert.equal(await count(), before + 1, action);
      const entry = (await ctx.adminRequest("GET", "/admin/audit?page_size=1")).json().items[0];
      assert.equal(entry.action, action);
      assert.equal(entry.actor.email, admin.email);
    }
    const partnerEntries = (
      await ctx.adminRequest("GET", `/admin/audit?target_type=partner&target_id=${newPartner}`)
    ).json();
    assert.deepEqual(
      partnerEntries.items.map((e: { action: string }) => e.action),
      ["partner.key_replace", "partner.active", "partner.allowed_ips", "partner.create"],
    );
    const active = partnerEntries.items[1];
    assert.deepEqual(
      [active.before, active.after, active.reason],
      [{ active: true }, { active: false }, "contract ended"],
    );
  });

  test("an action that fails leaves no entry, and an entry that cannot be written leaves no change", async () => {
    const db = ctx.services.database.db;
    const { pcid, base } = await newClient(5);
    const entries = await count();
    const was = await client(pcid);
    // The change fails at commit, after its entry was written: both are rolled back.
    await sql`CREATE FUNCTION test_refuse() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN RAISE EXCEPTION 'refused by the test'; END $$`.execute(db);
    await sql`CREATE CONSTRAINT TRIGGER test_refuse_clients AFTER UPDATE ON clients
      DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION test_refuse()`.execute(db);
    try {
      const res = await ctx.adminRequest("PUT", `${base}/status`, { status: "rejected", reason: "x" });
      assert.equal(res.statusCode, 500);
    } finally {
      await sql`DROP TRIGGER test_refuse_clients ON clients`.execute(db);
    }
    assert.equal(await count(), entries);
    assert.deepEqual(await client(pcid), was);
    // The entry cannot be written: the change is not made either.
    await sql`CREATE TRIGGER test_refuse_audit BEFORE INSERT ON audit_log
      FOR EACH ROW EXECUTE FUNCTION test_refuse()`.execute(db);
    try {
      const res = await ctx.adminRequest("PUT", `${base}/status`, { status: "rejected", reason: "x" });
      assert.equal(res.statusCode, 500);
      const pair = await ctx.adminRequest("PUT", "/admin/pairs/BTC-AED/price", {
        buy: "7",
        sell: "6",
        reason: "x",
      });
      assert.equal(pair.statusCode, 500);
    } finally {
      await sql`DROP TRIGGER test_refuse_audit ON audit_log`.execute(db);
      await sql`DROP FUNCTION test_refuse()`.execute(db);
    }
    assert.equal(await count(), entries);
    assert.deepEqual(await client(pcid), was);
    const price = await db
      .selectFrom("asset_pairs")
      .select("buy")
      .where("id", "=", "BTC-AED")
      .executeTakeFirstOrThrow();
    assert.notEqual(price.buy, "7.00000000");
  });

  test("the database refuses to change or remove an entry (UPDATE, DELETE, TRUNCATE)", async () => {
    const db = ctx.services.database.db;
    await ctx.adminRequest("PUT", "/admin/assets/AED", { published: true });
    const entries = await count();
    assert.ok(entries > 0);
    const snapshot = JSON.stringify(await db.selectFrom("audit_log").selectAll().orderBy("id").execute());
    for (const statement of [
      sql`UPDATE audit_log SET reason = 'rewritten'`,
      sql`UPDATE audit_log SET reason = 'rewritten' WHERE id = (SELECT min(id) FROM audit_log)`,
      sql`DELETE FROM audit_log`,
      sql`DELETE FROM audit_log WHERE id = (SELECT max(id) FROM audit_log)`,
      sql`TRUNCATE audit_log`,
    ]) {
      await assert.rejects(statement.execute(db), /the audit log is append-only/);
    }
    assert.equal(
      JSON.stringify(await db.selectFrom("audit_log").selectAll().orderBy("id").execute()),
      snapshot,
    );
  });

  test("GET /admin/audit: newest first, paged on the server, filtered; bad filters are a 422", async () => {
    const viewer = await operatorSession("viewer");
    const from = new Date(ctx.clock.nowMs() + 1).toISOString();
    for (let i = 0; i < 5; i++) {
      ctx.clock.advance(10);
      assert.equal(
        (await ctx.adminRequest("PUT", "/admin/pairs/ETH-AED", { lifetime_s: 20 + i })).statusCode,
        200,
      );
    }
    const all = await viewer.call("GET", `/admin/audit?action=pair.update&target_id=ETH-AED&from=${from}`);
    assert.equal(all.statusCode, 200, all.body);
    assert.equal(all.json().total, 5);
    assert.deepEqual(
      all.json().items.map((e: { after: { lifetime_s: number } }) => e.after.lifetime_s),
      [24, 23, 22, 21, 20],
    );
    const page2 = (
      await viewer.call(
        "GET",
        `/admin/audit?action=pair.update&target_id=ETH-AED&from=${from}&page=2&page_size=2`,
      )
    ).json();
    assert.deepEqual([page2.total, page2.page, page2.page_size], [5, 2, 2]);
    assert.deepEqual(
      page2.items.map((e: { after: { lifetime_s: number } }) => e.after.lifetime_s),
      [22, 21],
    );
    const mine = (await viewer.call("GET", `/admin/audit?actor=${viewer.id}`)).json();
    assert.equal(mine.total, 0);
    for (const [query, field] of [
      ["actor=someone", "actor"],
      ["from=yesterday", "from"],
      ["page_size=101", "page_size"],
    ] as const) {
      const res = await viewer.call("GET", `/admin/audit?${query}`);
      assert.equal(res.statusCode, 422, `${query}: ${res.body}`);
      assert.deepEqual(res.json().msg_detail[0].loc, ["query", field]);
    }
    assert.equal((await viewer.call("GET", "/admin/audit?unknown=1")).statusCode, 422);
    // A viewer reads the trail but changes nothing.
    assert.equal((await viewer.call("PUT", "/admin/pairs/ETH-AED", { lifetime_s: 5 })).statusCode, 403);
  });
});
