// Key rotation without downtime (docs/operations.md, "Rotating a partner's key"): a partner holds
// up to three active keys, a request signed by any of them is accepted, a retired key is refused by
// the next request in every process, and the keys of partners from before migration 0012 still work.

import assert from "node:assert/strict";
import crypto from "node:crypto";
import { after, before, describe, test } from "node:test";
import { generateKeyPair, signRequest } from "@counterpart/protocol";
import type { FastifyInstance } from "fastify";
import { buildPartnerApp } from "../../app.ts";
import { migrate } from "../../db/migrate.ts";
import { systemClock } from "../../platform/clock.ts";
import { systemRandom } from "../../platform/random.ts";
import { buildServices } from "../../services.ts";
import { startTestContext, type TestContext } from "../../testing/harness.ts";
import { openDatabaseBefore } from "../../testing/migrations.ts";
import { PartnerAuthenticator } from "./partner-auth.ts";

/** A partner whose rate limits the operator never set: every budget is the default. */
const defaultBudgets = { reads: null, writes: null, quotes: null };

describe("partner keys: rotation without downtime", () => {
  let ctx: TestContext;
  let second: FastifyInstance;
  before(async () => {
    ctx = await startTestContext();
    // A second partner app on the same database, with its own authenticator and what it keeps:
    // what a second process of the service is.
    const services = buildServices({
      config: ctx.config,
      database: ctx.services.database,
      clock: ctx.clock,
      random: systemRandom,
    });
    second = buildPartnerApp(services, { logger: false });
    await second.ready();
  });
  after(async () => {
    await second.close();
    await ctx.close();
  });

  /** A GET of the asset pairs signed by `privateKeyPem`, on `app`; answers the status. */
  async function get(app: FastifyInstance, partnerId: string, privateKeyPem: string): Promise<number> {
    ctx.clock.advance(1);
    const target = "/v1/partner/asset-pairs";
    const headers = signRequest({
      partnerId,
      privateKey: privateKeyPem,
      method: "GET",
      target,
      body: "",
      nowMs: ctx.clock.nowMs(),
    });
    const res = await app.inject({ method: "GET", url: target, headers, remoteAddress: "127.0.0.1" });
    return res.statusCode;
  }

  type Key = {
    id: string;
    label: string;
    active: boolean;
    public_key_pem: string;
    retired_at: string | null;
  };

  async function keysOf(partnerId: string): Promise<Key[]> {
    const res = await ctx.adminRequest("GET", `/admin/partners/${partnerId}/keys`);
    assert.equal(res.statusCode, 200, res.body);
    return (res.json() as { items: Key[] }).items;
  }

  test("two active keys both sign; a retired key is a 401 at once, in both processes", async () => {
    const p = await ctx.addPartner({ name: "Rotating Partner" });
    const [initial] = await keysOf(p.id);
    assert.equal(initial?.label, "initial");
    assert.equal(initial?.active, true);

    // Both processes have read the partner with its one key.
    assert.equal(await get(ctx.app, p.id, p.privateKeyPem), 200);
    assert.equal(await get(second, p.id, p.privateKeyPem), 200);

    const next = generateKeyPair();
    const added = await ctx.adminRequest("POST", `/admin/partners/${p.id}/keys`, {
      label: "2026 rotation",
      public_key_pem: next.publicKeyPem,
    });
    assert.equal(added.statusCode, 201, added.body);
    const newKey = (added.json() as { result: Key }).result;
    assert.equal(newKey.label, "2026 rotation");
    assert.equal(newKey.active, true);
    assert.equal(newKey.retired_at, null);

    for (const app of [ctx.app, second]) {
      assert.equal(await get(app, p.id, p.privateKeyPem), 200, "the old key still signs");
      assert.equal(await get(app, p.id, next.privateKeyPem), 200, "the new key signs");
    }
    // The partner's record shows the newest active key.
    const shown = await ctx.adminRequest("GET", `/admin/partners/${p.id}`);
    assert.equal(
      (shown.json() as { result: { public_key_pem: string } }).result.public_key_pem,
      newKey.public_key_pem,
    );

    const retired = await ctx.adminRequest("DELETE", `/admin/partners/${p.id}/keys/${initial!.id}`);
    assert.equal(retired.statusCode, 200, retired.body);
    assert.equal((retired.json() as { result: Key }).result.active, false);

    for (const app of [ctx.app, second]) {
      assert.equal(await get(app, p.id, p.privateKeyPem), 401, "the retired key is refused at once");
      assert.equal(await get(app, p.id, next.privateKeyPem), 200, "the new key still signs");
    }
    // And on the path that records the signature (a state-changing request), in a process that
    // kept the credentials from before the retirement.
    const kept = new PartnerAuthenticator(ctx.services.database.db, ctx.clock);
    const post = (key: string) => {
      ctx.clock.advance(1);
      const target = "/v1/partner/deposits";
      const h = signRequest({
        partnerId: p.id,
        privateKey: key,
        method: "POST",
        target,
        body: "{}",
        nowMs: ctx.clock.nowMs(),
      });
      return kept.authenticate({
        partnerId: h["X-Partner-ID"],
        timestamp: h["X-Timestamp"],
        signature: h["X-Signature"],
        method: "POST",
        target,
        routed: true,
        body: Buffer.from("{}"),
        clientIp: "127.0.0.1",
      });
    };
    assert.deepEqual(await post(next.privateKeyPem), {
      ok: true,
      partnerId: p.id,
      rateLimits: defaultBudgets,
    });
    const third = generateKeyPair();
    assert.equal(
      (
        await ctx.adminRequest("POST", `/admin/partners/${p.id}/keys`, {
          label: "third",
          public_key_pem: third.publicKeyPem,
        })
      ).statusCode,
      201,
    );
    assert.deepEqual(await post(third.privateKeyPem), {
      ok: true,
      partnerId: p.id,
      rateLimits: defaultBudgets,
    });
    const thirdId = (await keysOf(p.id)).find((k) => k.label === "third")!.id;
    assert.equal(
      (await ctx.adminRequest("DELETE", `/admin/partners/${p.id}/keys/${thirdId}`)).statusCode,
      200,
    );
    assert.deepEqual(await post(third.privateKeyPem), { ok: false, cause: "signature_mismatch" });

    // Retiring again answers the key unchanged; an unknown key id is a 404.
    const again = await ctx.adminRequest("DELETE", `/admin/partners/${p.id}/keys/${initial!.id}`);
    assert.equal(again.statusCode, 200);
    assert.equal(
      (again.json() as { result: Key }).result.retired_at,
      (retired.json() as { result: Key }).result.retired_at,
    );
    const unknown = await ctx.adminRequest("DELETE", `/admin/partners/${p.id}/keys/${crypto.randomUUID()}`);
    assert.equal(unknown.statusCode, 404);
    assert.equal((await ctx.adminRequest("DELETE", `/admin/partners/${p.id}/keys/nope`)).statusCode, 404);
  });

  test("a fourth active key is refused and nothing changes; a retired one frees a place", async () => {
    const p = await ctx.addPartner({ name: "Partner with many keys" });
    const extra = [generateKeyPair(), generateKeyPair()];
    for (const [i, k] of extra.entries()) {
      const res = await ctx.adminRequest("POST", `/admin/partners/${p.id}/keys`, {
        label: `extra ${i}`,
        public_key_pem: k.publicKeyPem,
      });
      assert.equal(res.statusCode, 201, res.body);
    }
    const before = await keysOf(p.id);
    const partnerBefore = (await ctx.adminRequest("GET", `/admin/partners/${p.id}`)).body;
    const fourth = generateKeyPair();
    const refused = await ctx.adminRequest("POST", `/admin/partners/${p.id}/keys`, {
      label: "fourth",
      public_key_pem: fourth.publicKeyPem,
    });
    assert.equal(refused.statusCode, 422, refused.body);
    assert.match(refused.body, /already has 3 active keys; retire one first/);
    assert.match(refused.body, /too_many_keys/);
    assert.deepEqual(await keysOf(p.id), before);
    assert.equal((await ctx.adminRequest("GET", `/admin/partners/${p.id}`)).body, partnerBefore);
    assert.equal(await get(ctx.app, p.id, fourth.privateKeyPem), 401);
    for (const k of [p, ...extra]) assert.equal(await get(ctx.app, p.id, k.privateKeyPem), 200);

    // The same key twice, an empty label, an unknown partner.
    const twice = await ctx.adminRequest("POST", `/admin/partners/${p.id}/keys`, {
      label: "again",
      public_key_pem: extra[0]!.publicKeyPem,
    });
    assert.equal(twice.statusCode, 422);
    assert.match(twice.body, /key_already_active/);
    const blank = await ctx.adminRequest("POST", `/admin/partners/${p.id}/keys`, {
      label: "  ",
      public_key_pem: fourth.publicKeyPem,
    });
    assert.equal(blank.statusCode, 422);
    assert.equal(
      (await ctx.adminRequest("GET", `/admin/partners/${crypto.randomUUID()}/keys`)).statusCode,
      404,
    );

    await ctx.adminRequest("DELETE", `/admin/partners/${p.id}/keys/${before[0]!.id}`);
    const now = await ctx.adminRequest("POST", `/admin/partners/${p.id}/keys`, {
      label: "fourth",
      public_key_pem: fourth.publicKeyPem,
    });
    assert.equal(now.statusCode, 201, now.body);
    assert.equal(await get(ctx.app, p.id, fourth.privateKeyPem), 200);
    assert.equal((await keysOf(p.id)).length, 4, "the retired key is kept, retired");
  });

  test("PUT …/key replaces all the keys by the one given", async () => {
    const p = await ctx.addPartner({ name: "Partner replaced" });
    const other = generateKeyPair();
    await ctx.adminRequest("POST", `/admin/partners/${p.id}/keys`, {
      label: "other",
      public_key_pem: other.publicKeyPem,
    });
    const only = generateKeyPair();
    const res = await ctx.adminRequest("PUT", `/admin/partners/${p.id}/key`, {
      public_key_pem: only.publicKeyPem,
    });
    assert.equal(res.statusCode, 200, res.body);
    assert.equal(
      (res.json() as { result: { public_key_pem: string } }).result.public_key_pem,
      only.publicKeyPem,
    );
    const active = (await keysOf(p.id)).filter((k) => k.active);
    assert.deepEqual(
      active.map((k) => k.public_key_pem),
      [only.publicKeyPem],
    );
    for (const app of [ctx.app, second]) {
      assert.equal(await get(app, p.id, p.privateKeyPem), 401);
      assert.equal(await get(app, p.id, other.privateKeyPem), 401);
      assert.equal(await get(app, p.id, only.privateKeyPem), 200);
    }
  });
});

describe("migration 0012: a partner of the single-key shape keeps its key", () => {
  test("a partner inserted before the migration authenticates after it", async () => {
    const { database, close } = await openDatabaseBefore("0012");
    try {
      const keys = generateKeyPair();
      const id = crypto.randomUUID();
      await database.withScriptSession(async (run) => {
        await run(`INSERT INTO partners (id, name, public_key_pem, allowed_ips)
          VALUES ('${id}', 'Old Partner', '${keys.publicKeyPem}', '{127.0.0.1/32}')`);
        await run(
          `INSERT INTO partners (id, name, public_key_pem) VALUES ('${crypto.randomUUID()}', 'Keyless', NULL)`,
        );
      });
      assert.ok((await migrate(database)).includes("0012_partner_keys"));

      const auth = new PartnerAuthenticator(database.db, systemClock);
      const clock = systemClock;
      const target = "/v1/partner/asset-pairs";
      const h = signRequest({
        partnerId: id,
        privateKey: keys.privateKeyPem,
        method: "GET",
        target,
        body: "",
        nowMs: clock.nowMs(),
      });
      const result = await auth.authenticate({
        partnerId: h["X-Partner-ID"],
        timestamp: h["X-Timestamp"],
        signature: h["X-Signature"],
        method: "GET",
        target,
        routed: true,
        body: undefined,
        clientIp: "127.0.0.1",
      });
      assert.deepEqual(result, { ok: true, partnerId: id, rateLimits: defaultBudgets });
      const rows = await database.db.selectFrom("partner_keys").selectAll().execute();
      assert.equal(rows.length, 1, "a partner without a key gets none");
      assert.equal(rows[0]!.label, "initial");
      assert.equal(rows[0]!.partner_id, id);
      assert.equal(rows[0]!.retired_at, null);
    } finally {
      await close();
    }
  });
});
