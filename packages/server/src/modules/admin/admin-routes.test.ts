// The admin API: bearer token, partner provisioning with key and allow-list checks, asset flags
// (which the partner API then honours), and the ledger check.

import assert from "node:assert/strict";
import crypto from "node:crypto";
import { after, before, describe, test } from "node:test";
import { generateKeyPair } from "@counterpart/protocol";
import { sql } from "kysely";
import { insertClient } from "../../testing/fixtures.ts";
import { startTestContext, type TestContext } from "../../testing/harness.ts";

describe("admin API", () => {
  let ctx: TestContext;
  before(async () => {
    ctx = await startTestContext();
  });
  after(async () => {
    await ctx.close();
  });

  test("every admin route needs the bearer token", async () => {
    for (const token of [undefined, "Bearer wrong", `Basic ${ctx.adminToken}`, ctx.adminToken]) {
      const res = await ctx.admin.inject({
        method: "GET",
        url: "/admin/partners",
        headers: token === undefined ? {} : { authorization: token },
      });
      assert.equal(res.statusCode, 401);
      assert.deepEqual(res.json(), { code: 401, msg: "Unauthorized", msg_detail: null });
    }
    assert.equal((await ctx.adminRequest("GET", "/admin/partners")).statusCode, 200);
  });

  test("partners: create, show, list, key, allow-list and activation, with input checks", async () => {
    const keys = generateKeyPair();
    const created = await ctx.adminRequest("POST", "/admin/partners", {
      name: "Acme",
      public_key_pem: keys.publicKeyPem,
      allowed_ips: ["10.0.0.0/8", "2001:db8::/32", "127.0.0.1"],
    });
    assert.equal(created.statusCode, 201);
    const p = created.json().result;
    assert.match(p.id, /^[0-9a-f-]{36}$/);
    assert.equal(p.active, true);
    assert.deepEqual(p.allowed_ips, ["10.0.0.0/8", "2001:db8::/32", "127.0.0.1"]);
    assert.equal((await ctx.adminRequest("GET", `/admin/partners/${p.id}`)).json().result.name, "Acme");
    assert.ok(
      (await ctx.adminRequest("GET", "/admin/partners"))
        .json()
        .items.some((x: { id: string }) => x.id === p.id),
    );

    const rsa = crypto
      .generateKeyPairSync("rsa", { modulusLength: 2048 })
      .publicKey.export({ type: "spki", format: "pem" });
    const identity = Buffer.concat([
      Buffer.from("302a300506032b6570032100", "hex"),
      Buffer.from([1, ...new Array(31).fill(0)]),
    ]);
    const smallOrder = `-----BEGIN PUBLIC KEY-----\n${identity.toString("base64")}\n-----END PUBLIC KEY-----\n`;
    for (const [pem, type] of [
      ["not a key", "public_key_not_pem"],
      [String(rsa), "public_key_not_ed25519"],
      [smallOrder, "public_key_small_order"],
    ]) {
      const res = await ctx.adminRequest("PUT", `/admin/partners/${p.id}/key`, { public_key_pem: pem });
      assert.equal(res.statusCode, 422, type);
      assert.equal(res.json().msg_detail[0].type, type);
    }
    const badIp = await ctx.adminRequest("PUT", `/admin/partners/${p.id}/ips`, {
      allowed_ips: ["10.0.0.0/33"],
    });
    assert.equal(badIp.statusCode, 422);
    assert.equal(badIp.json().msg_detail[0].type, "cidr_parsing");
    // Entries another reader would take for another host (127.0.0.010 is 127.0.0.8 to inet_aton).
    for (const odd of ["127.0.0.010", "0177.0.0.1", "127.1", "0x7f000001", "2130706433", "1.2.3.4/08"]) {
      const res = await ctx.adminRequest("PUT", `/admin/partners/${p.id}/ips`, { allowed_ips: [odd] });
      assert.equal(res.statusCode, 422, odd);
      assert.equal(res.json().msg_detail[0].type, "cidr_parsing", odd);
      const create = await ctx.adminRequest("POST", "/admin/partners", {
        name: "Odd",
        public_key_pem: keys.publicKeyPem,
        allowed_ips: [odd],
      });
      assert.equal(create.statusCode, 422, odd);
      assert.equal(create.json().msg_detail[0].type, "cidr_parsing", odd);
    }
    const disabled = await ctx.adminRequest("PUT", `/admin/partners/${p.id}/active`, {
      active: false,
      reason: "test set-up",
    });
    assert.equal(disabled.json().result.active, false);
    const unknown = await ctx.adminRequest("GET", "/admin/partners/00000000-0000-4000-8000-000000000000");
    assert.equal(unknown.statusCode, 404);
    assert.equal((await ctx.adminRequest("GET", "/admin/partners/not-a-uuid")).statusCode, 404);
    // The unchanged record after the refused changes.
    const after = (await ctx.adminRequest("GET", `/admin/partners/${p.id}`)).json().result;
    assert.equal(after.public_key_pem, p.public_key_pem);
    assert.deepEqual(after.allowed_ips, p.allowed_ips);
  });

  test("asset upsert sets the flags the funding rules read (2012 once not depositable)", async () => {
    await insertClient(ctx.services.database.db, ctx.partner.id, 1);
    const deposit = (ref: string) =>
      ctx.signed({
        method: "POST",
        url: "/v1/partner/deposits",
        body: { partner_client_id: "client-1", asset_id: "EUR", amount: "1", partner_order_ref: ref },
      });
    assert.equal((await deposit("e1")).statusCode, 200);
    const off = await ctx.adminRequest("PUT", "/admin/assets/EUR", { depositable: false });
    assert.equal(off.statusCode, 200);
    assert.equal(off.json().result.depositable, false);
    assert.equal((await deposit("e2")).json().code, 2012);
    await ctx.adminRequest("PUT", "/admin/assets/EUR", { depositable: true });
    assert.equal((await deposit("e3")).statusCode, 200);

    const created = await ctx.adminRequest("PUT", "/admin/assets/GBP", {
      type: "fiat",
      name_en: "Pound Sterling",
      published: true,
      depositable: true,
      withdrawable: true,
      usd_rate: "1.27",
    });
    assert.equal(created.statusCode, 201);
    assert.equal(created.json().result.decimal_places, 2);
    const pub = await ctx.app.inject({ method: "GET", url: "/v1/public/assets/GBP" });
    assert.equal(pub.json().result.name_en, "Pound Sterling");
    assert.equal((await ctx.adminRequest("PUT", "/admin/assets/NEW1", { published: true })).statusCode, 422);
    assert.equal(
      (await ctx.adminRequest("PUT", "/admin/assets/bad-id", { type: "fiat", name_en: "x" })).statusCode,
      422,
    );
    assert.equal((await ctx.adminRequest("PUT", "/admin/assets/EUR", { decimal_places: 9 })).statusCode, 422);
  });

  test("an asset in use (held in accounts or traded in pairs) keeps its type and decimal places", async () => {
    const asset = (id: string) =>
      ctx.services.database.db
        .selectFrom("assets")
        .selectAll()
        .where("id", "=", id)
        .executeTakeFirstOrThrow();
    const audit = () =>
      ctx.services.database.db
        .selectFrom("audit_log")
        .select((eb) => eb.fn.countAll<string>().as("n"))
        .execute();
    // EUR is held (the test above deposited it); BTC is traded in pairs, held by nobody.
    for (const [id, body, field] of [
      ["EUR", { type: "crypto" }, "type"],
      ["EUR", { decimal_places: 8, name_en: "Euro (renamed)" }, "decimal_places"],
      ["BTC", { type: "fiat" }, "type"],
    ] as const) {
      const [before, entries] = [await asset(id), await audit()];
      const res = await ctx.adminRequest("PUT", `/admin/assets/${id}`, body);
      assert.equal(res.statusCode, 422, `${id}: ${res.body}`);
      assert.deepEqual(res.json().msg_detail, [
        {
          loc: ["body", field],
          msg: "An asset held in accounts or traded in pairs keeps its type and decimal places",
          type: "asset_in_use",
        },
      ]);
      assert.deepEqual(await asset(id), before);
      assert.deepEqual(await audit(), entries);
    }
    // The same type and places again, or any other field, are changes like any other.
    const same = await ctx.adminRequest("PUT", "/admin/assets/EUR", {
      type: "fiat",
      decimal_places: 2,
      name_en: "Euro",
    });
    assert.equal(same.statusCode, 200, same.body);
    // An asset nobody holds or trades may still be corrected.
    await ctx.adminRequest("PUT", "/admin/assets/XAU1", { type: "fiat", name_en: "Gold" });
    const corrected = await ctx.adminRequest("PUT", "/admin/assets/XAU1", {
      type: "crypto",
      decimal_places: 6,
    });
    assert.equal(corrected.statusCode, 200, corrected.body);
    assert.equal(corrected.json().result.type, "crypto");
    assert.equal(corrected.json().result.decimal_places, 6);
  });

  test("what the admin fuzz found: each a 422 in our words, or a 200, that changes nothing it should not", async () => {
    const tables = async () => ({
      assets: await ctx.services.database.db.selectFrom("assets").selectAll().orderBy("id").execute(),
      pairs: await ctx.services.database.db.selectFrom("asset_pairs").selectAll().orderBy("id").execute(),
      partnerPairs: await ctx.services.database.db.selectFrom("partner_pairs").selectAll().execute(),
    });
    const over = (loc: string[]) => [
      { loc, msg: "Input should be less than or equal to 1000000000000000", type: "less_than_equal" },
    ];
    const before = await tables();
    // Decimals past NUMERIC(38,8) (numeric field overflow, a 500): every admin decimal takes the
    // bound of an amount.
    for (const [url, body, loc] of [
      ["/admin/assets/USDT", { usd_rate: "99999999999999999999999999999999999999" }, ["body", "usd_rate"]],
      ["/admin/pairs/BTC-AED/price", { buy: "1e30", sell: "1", reason: "test" }, ["body", "buy"]],
      ["/admin/pairs/BTC-AED", { max_volume: "1000000000000000.00000001" }, ["body", "max_volume"]],
    ] as const) {
      const res = await ctx.adminRequest("PUT", url, body);
      assert.equal(res.statusCode, 422, `${url}: ${res.body}`);
      assert.deepEqual(res.json().msg_detail, over([...loc]));
    }
    // The bound itself is taken.
    const atBound = await ctx.adminRequest("PUT", "/admin/pairs/BTC-AED", { max_volume: "1000000000000000" });
    assert.equal(atBound.statusCode, 200, atBound.body);
    assert.equal(atBound.json().result.max_volume, "1000000000000000.00000000");
    const restored = await ctx.adminRequest("PUT", "/admin/pairs/BTC-AED", {
      max_volume: before.pairs.find((p) => p.id === "BTC-AED")!.max_volume,
    });
    assert.equal(restored.statusCode, 200, restored.body);
    // Ids past what a JavaScript number holds exactly (Ajv read them as 1e38, the database was asked
    // for the bigint "1e+38", a 500): a 422 at the parameter.
    const huge = "99999999999999999999999999999999999999";
    for (const [url, loc] of [
      [`/admin/orders/${huge}`, ["path", "order_id"]],
      [`/admin/orders?after_id=${huge}`, ["query", "after_id"]],
    ] as const) {
      const res = await ctx.adminRequest("GET", url);
      assert.equal(res.statusCode, 422, `${url}: ${res.body}`);
      assert.deepEqual(res.json().msg_detail, [
        {
          loc: [...loc],
          msg: "Input should be less than or equal to 9007199254740991",
          type: "less_than_equal",
        },
      ]);
    }
    // The console's pages take a session, not the bearer token: sent to sign in, whatever the id
    // (with a session, such an id is the console's 404 page: console-records.test.ts).
    for (const url of [`/console/orders/${huge}`, `/console/documents/${huge}/front`]) {
      const res = await ctx.adminRequest("GET", url);
      assert.equal(res.statusCode, 303, `${url}: ${res.body}`);
      assert.equal(res.headers.location, "/console/sign-in");
    }
    // The largest exact one is an id like any other: no such order.
    assert.equal((await ctx.adminRequest("GET", "/admin/orders/9007199254740991")).statusCode, 404);
    assert.deepEqual(await tables(), before);
    // A partner's pair settings with nothing to change (an empty SET, a syntax error and a 500):
    // created with the defaults the first time, the same row after.
    const url = `/admin/partners/${ctx.partner.id}/pairs/BTC-AED`;
    const first = await ctx.adminRequest("PUT", url, {});
    assert.equal(first.statusCode, 200, first.body);
    const second = await ctx.adminRequest("PUT", url, {});
    assert.equal(second.statusCode, 200, second.body);
    assert.deepEqual(second.json(), first.json());
    assert.deepEqual(first.json().result, {
      partner_id: ctx.partner.id,
      pair_id: "BTC-AED",
      available: true,
      fee_rate: null,
    });
  });

  test("a union of literals names every literal; a nullable field is one entry that names null", async () => {
    const detail = async (method: "POST" | "PUT", url: string, body: unknown) => {
      const res = await ctx.adminRequest(method, url, body);
      assert.equal(res.statusCode, 422, `${url}: ${res.body}`);
      return res.json().msg_detail;
    };
    assert.deepEqual(await detail("POST", "/admin/operators", { email: "x@example.com", role: "root" }), [
      {
        loc: ["body", "role"],
        msg: "Input should be 'viewer', 'compliance' or 'admin'",
        type: "literal_error",
      },
    ]);
    assert.deepEqual(await detail("PUT", "/admin/assets/NEWC", { type: "gold", name_en: "Gold" }), [
      { loc: ["body", "type"], msg: "Input should be 'fiat' or 'crypto'", type: "literal_error" },
    ]);
    const limits = `/admin/partners/${ctx.partner.id}/limits`;
    assert.deepEqual(await detail("PUT", limits, { reads: 0 }), [
      {
        loc: ["body", "reads"],
        msg: "Input should be greater than or equal to 1",
        type: "greater_than_equal",
      },
    ]);
    assert.deepEqual(await detail("PUT", limits, { reads: "5" }), [
      { loc: ["body", "reads"], msg: "Input should be a valid integer or null", type: "int_type" },
    ]);
    assert.deepEqual(
      await detail("PUT", `/admin/partners/${ctx.partner.id}/pairs/BTC-AED`, { fee_rate: 5 }),
      [{ loc: ["body", "fee_rate"], msg: "Input should be a valid string or null", type: "string_type" }],
    );
    // Null itself is what the nullable fields are for: the budget goes back to its default.
    assert.equal((await ctx.adminRequest("PUT", limits, { reads: null })).statusCode, 200);
  });

  test("the ledger check reports clean, then the account that was tampered with", async () => {
    // A client account of the test's own to tamper with, whatever ran before.
    await insertClient(ctx.services.database.db, ctx.partner.id, 2);
    const funded = await ctx.signed({
      method: "POST",
      url: "/v1/partner/deposits",
      body: { partner_client_id: "client-2", asset_id: "AED", amount: "1", partner_order_ref: "ledger-1" },
    });
    assert.equal(funded.statusCode, 200, funded.body);
    const clean = await ctx.adminRequest("GET", "/admin/ledger/check");
    assert.deepEqual(clean.json(), { result: { ok: true, differences: [] } });
    await sql`UPDATE accounts SET balance = balance + 0.01 WHERE kind = 'client'`.execute(
      ctx.services.database.db,
    );
    const dirty = (await ctx.adminRequest("GET", "/admin/ledger/check")).json().result;
    assert.equal(dirty.ok, false);
    assert.ok(
      dirty.differences.some(
        (d: { kind: string; account?: string }) =>
          d.kind === "account_balance" && d.account?.startsWith("client:"),
      ),
    );
    await sql`UPDATE accounts SET balance = balance - 0.01 WHERE kind = 'client'`.execute(
      ctx.services.database.db,
    );
  });
});
