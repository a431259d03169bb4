// docs/reference.md §2.1 rules 5–7, §4.6 and §7.3 on PUT /v1/partner/clients/{partner_client_id}/;
// docs/decisions.md "Clients and documents" (200 {result}, immutable fields are a 422 extra_forbidden, other
// unknown fields ignored). Every failure is checked to have changed nothing.

import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { isoFromMs } from "../../db/time.ts";
import { clientPayload, clientsState, insertClient } from "../../testing/fixtures.ts";
import { startTestContext, type TestContext, type TestPartner } from "../../testing/harness.ts";
import { duplicateOf } from "./clients-service.ts";

type Body = Record<string, unknown>;
type Loc = (string | number)[];

/** A valid update body for client `n`'s unique values: the create payload without the four fields. */
function updateBody(n: number, over: Body = {}): Body {
  const {
    partner_client_id: _p,
    account_type: _a,
    birth_date: _b,
    place_of_birth_id: _pob,
    ...rest
  } = clientPayload(n);
  return { ...rest, ...over };
}

describe("PUT /v1/partner/clients/{partner_client_id}/", () => {
  let ctx: TestContext;
  let n = 0;
  const url = (pcid: string) => `/v1/partner/clients/${encodeURIComponent(pcid)}/`;

  before(async () => {
    ctx = await startTestContext();
  });
  after(async () => {
    await ctx.close();
  });

  /** A new client created through the API; returns its number and record. */
  async function newClient(over: Body = {}): Promise<{ k: number; pcid: string; record: Body }> {
    const k = ++n;
    const res = await ctx.signed({
      method: "POST",
      url: "/v1/partner/clients",
      body: clientPayload(k, over),
    });
    assert.equal(res.statusCode, 201, res.body);
    return { k, pcid: `client-${k}`, record: res.json().result };
  }

  const put = (pcid: string, body: unknown, partner?: TestPartner) =>
    ctx.signed({ method: "PUT", url: url(pcid), body, ...(partner ? { partner } : {}) });

  async function unchangedAfter(
    run: () => Promise<{ statusCode: number; json(): { code: number; msg_detail: unknown } }>,
  ) {
    const before_ = await clientsState(ctx.services.database.db);
    const res = await run();
    assert.deepEqual(await clientsState(ctx.services.database.db), before_, "state changed");
    return res;
  }

  async function expect422(pcid: string, body: unknown, expected: [Loc, string][], why = ""): Promise<void> {
    const res = await unchangedAfter(() => put(pcid, body));
    assert.equal(res.statusCode, 422, why);
    assert.deepEqual(
      (res.json().msg_detail as { loc: Loc; type: string }[]).map((d) => [d.loc, d.type]),
      expected,
      why,
    );
  }

  async function expectCode(pcid: string, body: unknown, code: number, why = ""): Promise<void> {
    const res = await unchangedAfter(() => put(pcid, body));
    assert.equal(res.statusCode, 400, why);
    assert.equal(res.json().code, code, why);
    assert.equal(res.json().msg_detail, null);
  }

  test("200 {result: client}: every mutable field replaced, the rest as it was", async () => {
    const { k, pcid, record } = await newClient();
    ctx.clock.advance(60_000);
    const body = updateBody(k, {
      name: "Renamed Person",
      email: "renamed@example.org",
      phone: "+447911123456",
      residency_id: "gb",
      citizenship_id: "ae",
      national_number: "N-2",
      government_id_number: "GB-ID-1",
      government_id_doe: "2031-12-31",
      residency_visa_number: "UK-VISA",
      residency_visa_doe: "2029-01-01",
      address: { street: "10 Downing St", city: "London", postal_code: "SW1A 2AA", unit: "" },
      employment: {
        status: "retired",
        company: "Old Co",
        job_industry: "none",
        job_level: "n/a",
        job_title: "n/a",
      },
      trading_volume: "25001_100000",
      account_purpose: ["converting_crypto_to_fiat"],
    });
    const res = await put(pcid, body);
    assert.equal(res.statusCode, 200, res.body);
    const expected = {
      ...record,
      ...body,
      // Immutable, and not taken from the body.
      partner_client_id: pcid,
      account_type: "personal",
      birth_date: record.birth_date,
      place_of_birth_id: record.place_of_birth_id,
      status: "verified",
      active: true,
      created_at: record.created_at,
      verified_at: record.verified_at,
    };
    assert.deepEqual(res.json(), { result: expected });
    assert.deepEqual((await ctx.signed({ method: "GET", url: url(pcid) })).json().result, expected);
  });

  test("a full replacement: optional fields left out become null; the phone is stored in E.164", async () => {
    const { k, pcid } = await newClient({ national_number: "N-1" });
    const body = updateBody(k, { phone: "+9710509990001" });
    delete body.national_number;
    const res = await put(pcid, body);
    assert.equal(res.statusCode, 200, res.body);
    assert.equal(res.json().result.national_number, null);
    assert.equal(res.json().result.residency_visa_number, null);
    assert.equal(res.json().result.phone, "+971509990001");
  });

  test("each required field absent is a 422 missing", async () => {
    const { k, pcid } = await newClient();
    for (const field of [
      "name",
      "email",
      "phone",
      "residency_id",
      "citizenship_id",
      "government_id_number",
      "government_id_doe",
      "address",
      "employment",
      "trading_volume",
      "account_purpose",
    ]) {
      const body = updateBody(k);
      delete body[field];
      await expect422(pcid, body, [[["body", field], "missing"]], field);
    }
  });

  test("account_type, birth_date, place_of_birth_id and partner_client_id in the body are a 422 extra_forbidden, whatever their value", async () => {
    const { k, pcid, record } = await newClient();
    for (const [field, value] of [
      ["account_type", "personal"],
      ["account_type", "corporate"],
      ["birth_date", record.birth_date],
      ["birth_date", "1970-01-01"],
      ["birth_date", null],
      ["place_of_birth_id", "ae"],
      ["partner_client_id", pcid],
      ["partner_client_id", "someone-else"],
    ] as const) {
      await expect422(
        pcid,
        updateBody(k, { [field]: value }),
        [[["body", field], "extra_forbidden"]],
        `${field}`,
      );
    }
    // Reported together with the schema's own findings.
    const body = updateBody(k, { birth_date: "1970-01-01", account_type: "corporate" });
    delete body.email;
    await expect422(pcid, body, [
      [["body", "email"], "missing"],
      [["body", "account_type"], "extra_forbidden"],
      [["body", "birth_date"], "extra_forbidden"],
    ]);
  });

  test("other unknown fields are ignored", async () => {
    const { k, pcid } = await newClient();
    const res = await put(
      pcid,
      updateBody(k, { status: "rejected", active: false, id: 1, verified_at: null, x: 1 }),
    );
    assert.equal(res.statusCode, 200, res.body);
    assert.equal(res.json().result.status, "verified");
    assert.equal(res.json().result.active, true);
    assert.notEqual(res.json().result.verified_at, null);
  });

  test("schema rules hold on update: lengths (255 ok, 256 not), NUL, e-mail, phone, dates, countries, employment, account_purpose", async () => {
    const { k, pcid } = await newClient();
    const ok = await put(pcid, updateBody(k, { name: "n".repeat(255), trading_volume: "t".repeat(255) }));
    assert.equal(ok.statusCode, 200, ok.body);
    const cases: [Body, Loc, string][] = [
      [{ name: "n".repeat(256) }, ["name"], "string_too_long"],
      [{ government_id_number: "g".repeat(256) }, ["government_id_number"], "string_too_long"],
      [
        { address: { street: "s".repeat(256), city: "c", postal_code: "p", unit: "u" } },
        ["address", "street"],
        "string_too_long",
      ],
      [{ name: "a\u0000" }, ["name"], "string_nul"],
      [{ email: "not-an-email" }, ["email"], "email_parsing"],
      [{ phone: "+1234" }, ["phone"], "value_error"],
      [{ government_id_doe: "2030-02-31" }, ["government_id_doe"], "date_from_datetime_parsing"],
      [{ residency_id: "AE" }, ["residency_id"], "string_pattern_mismatch"],
      [{ account_purpose: [] }, ["account_purpose"], "too_short"],
      [
        {
          employment: {
            status: "self_employed",
            company: "c",
            job_industry: "i",
            job_title: "t",
            job_level: "l",
          },
        },
        ["employment", "job_level"],
        "extra_forbidden",
      ],
      [
        { employment: { status: "housewife", company: "c", job_industry: "i", job_title: "t" } },
        ["employment", "job_level"],
        "missing",
      ],
    ];
    for (const [over, loc, type] of cases) {
      await expect422(pcid, updateBody(k, over), [[["body", ...loc], type]], loc.join("."));
    }
  });

  test("uniqueness on the new values: 2027 (any case), 2028, 2016, in that order; the client's own values may stay", async () => {
    const other = await newClient();
    const me = await newClient();
    const theirs = clientPayload(other.k);
    await expectCode(me.pcid, updateBody(me.k, { email: theirs.email }), 2027, "email");
    await expectCode(
      me.pcid,
      updateBody(me.k, { email: String(theirs.email).toUpperCase() }),
      2027,
      "email case",
    );
    await expectCode(me.pcid, updateBody(me.k, { phone: theirs.phone }), 2028, "phone");
    await expectCode(
      me.pcid,
      updateBody(me.k, { government_id_number: theirs.government_id_number }),
      2016,
      "gov",
    );
    await expectCode(
      me.pcid,
      updateBody(me.k, {
        email: theirs.email,
        phone: theirs.phone,
        government_id_number: theirs.government_id_number,
      }),
      2027,
      "all three",
    );
    await expectCode(
      me.pcid,
      updateBody(me.k, { phone: theirs.phone, government_id_number: theirs.government_id_number }),
      2028,
      "phone and gov",
    );
    // Keeping one's own values, or changing the case of one's own e-mail, is no conflict.
    const mine = clientPayload(me.k);
    const same = await put(me.pcid, updateBody(me.k, { email: String(mine.email).toUpperCase() }));
    assert.equal(same.statusCode, 200, same.body);
    assert.equal(same.json().result.email, String(mine.email).toUpperCase());
  });

  test("countries and the visa rule on update: 2022, 2023, 2025, after uniqueness; never 2021, 2024 or 2026", async () => {
    const other = await newClient();
    const me = await newClient({ birth_date: "2008-01-01" });
    const visa = { residency_visa_number: "V", residency_visa_doe: "2030-01-01" };
    await expectCode(me.pcid, updateBody(me.k, { ...visa, residency_id: "zz" }), 2022);
    await expectCode(me.pcid, updateBody(me.k, { ...visa, residency_id: "ir" }), 2022);
    await expectCode(me.pcid, updateBody(me.k, { ...visa, citizenship_id: "kp" }), 2023);
    await expectCode(me.pcid, updateBody(me.k, { residency_id: "gb" }), 2025);
    await expectCode(me.pcid, updateBody(me.k, { residency_id: "gb", residency_visa_number: "V" }), 2025);
    await expectCode(
      me.pcid,
      updateBody(me.k, { residency_id: "zz", email: clientPayload(other.k).email }),
      2027,
      "uniqueness first",
    );
    // The client's place of birth may since have become unsupported: update does not judge it.
    const res = await put(me.pcid, updateBody(me.k, { ...visa, residency_id: "gb" }));
    assert.equal(res.statusCode, 200, res.body);
  });

  test("2008 for an unknown client and for another partner's client; the path needs its trailing slash", async () => {
    const { k, pcid } = await newClient();
    await expectCode("nobody", updateBody(k), 2008);
    const stranger = await ctx.addPartner();
    const before_ = await clientsState(ctx.services.database.db);
    const foreign = await put(pcid, updateBody(k, { name: "Hijacked" }), stranger);
    assert.equal(foreign.statusCode, 400);
    assert.equal(foreign.json().code, 2008);
    const noSlash = await ctx.signed({
      method: "PUT",
      url: `/v1/partner/clients/${pcid}`,
      body: updateBody(k),
    });
    assert.equal(noSlash.statusCode, 404);
    assert.deepEqual(noSlash.json(), { code: 404, msg: "Not Found", msg_detail: null });
    assert.deepEqual(await clientsState(ctx.services.database.db), before_);
    // 422 comes before 2008 (docs/errors.md "Order of checks").
    const res = await put("nobody", updateBody(k, { email: "bad" }));
    assert.equal(res.statusCode, 422);
  });

  test("deactivated and unverified clients can be updated", async () => {
    const db = ctx.services.database.db;
    const k = ++n;
    const row = await insertClient(db, ctx.partner.id, k, { status: "under_review", active: false });
    const res = await put(row.partnerClientId, updateBody(k, { name: "Still Here" }));
    assert.equal(res.statusCode, 200, res.body);
    assert.equal(res.json().result.status, "under_review");
    assert.equal(res.json().result.active, false);
  });

  test("two clients moving to the same e-mail at once: one succeeds, one gets 2027, never a 500", async () => {
    for (let round = 0; round < 3; round++) {
      const a = await newClient();
      const b = await newClient();
      const email = `shared-${round}@example.com`;
      const results = await Promise.all([
        put(a.pcid, updateBody(a.k, { email })),
        put(b.pcid, updateBody(b.k, { email })),
      ]);
      assert.deepEqual(
        results.map((r) => r.statusCode).sort(),
        [200, 400],
        results.map((r) => r.body).join(" | "),
      );
      assert.equal(results.find((r) => r.statusCode === 400)!.json().code, 2027);
    }
  });

  test("updated_at moves; created_at and verified_at do not", async () => {
    const { k, pcid, record } = await newClient();
    ctx.clock.advance(5_000);
    const res = await put(pcid, updateBody(k, { name: "Later" }));
    assert.equal(res.json().result.created_at, record.created_at);
    assert.equal(res.json().result.verified_at, record.verified_at);
    const row = await ctx.services.database.db
      .selectFrom("clients")
      .select("updated_at")
      .where("partner_client_id", "=", pcid)
      .executeTakeFirstOrThrow();
    assert.equal(row.updated_at, isoFromMs(ctx.clock.nowMs()));
  });
});

describe("unique violations from the database map to the codes", () => {
  let ctx: TestContext;
  before(async () => {
    ctx = await startTestContext();
  });
  after(async () => {
    await ctx.close();
  });

  test("each unique constraint of the clients table names its code (the path a lost race takes)", async () => {
    const db = ctx.services.database.db;
    await insertClient(db, ctx.partner.id, 1);
    const base = clientPayload(2);
    const row = (over: Body) => ({
      partner_id: ctx.partner.id,
      partner_client_id: String(base.partner_client_id),
      account_type: "personal" as const,
      name: null,
      birth_date: "1990-01-01",
      status: "verified" as const,
      email: String(base.email),
      phone: String(base.phone),
      residency_id: "ae",
      citizenship_id: "ae",
      place_of_birth_id: "ae",
      national_number: null,
      government_id_number: String(base.government_id_number),
      government_id_doe: "2030-01-01",
      residency_visa_number: null,
      residency_visa_doe: null,
      address: JSON.stringify(base.address),
      employment: JSON.stringify(base.employment),
      trading_volume: "x",
      account_purpose: ["long_term_investment" as const],
      ...over,
    });
    const taken = clientPayload(1);
    for (const [over, code] of [
      [{ partner_client_id: taken.partner_client_id }, "duplicate_partner_client_id"],
      [{ email: String(taken.email).toUpperCase() }, "duplicate_email"],
      [{ phone: taken.phone }, "duplicate_phone"],
      [{ government_id_number: taken.government_id_number }, "government_id_taken"],
    ] as const) {
      const err = await db
        .insertInto("clients")
        .values(row(over))
        .execute()
        .then(
          () => null,
          (e: unknown) => e,
        );
      assert.notEqual(err, null, code);
      assert.equal(duplicateOf(err), code);
    }
    assert.equal(duplicateOf(new Error("other")), null);
  });
});
