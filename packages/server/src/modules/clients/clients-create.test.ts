// docs/reference.md §2.1, §3.1, §4.6, §7.2, §7.3, §8 on POST /v1/partner/clients; docs/errors.md
// "Order of checks"; docs/decisions.md "Hardening", "Clients and documents", "Point by point". Every failure is checked to
// have changed nothing.

import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import type { LightMyRequestResponse } from "fastify";
import { isoFromMs } from "../../db/time.ts";
import { clientPayload, clientsState } from "../../testing/fixtures.ts";
import { startTestContext, type TestContext, type TestPartner } from "../../testing/harness.ts";
import { ClientsService } from "./clients-service.ts";
import { checkClientFields, employmentRules, employmentStatuses } from "./clients-validation.ts";

type Body = Record<string, unknown>;
type Loc = (string | number)[];

describe("POST /v1/partner/clients", () => {
  let ctx: TestContext;
  let n = 1000;
  /** A valid payload with fresh unique values. */
  const fresh = (over: Body = {}) => clientPayload(++n, over);

  before(async () => {
    ctx = await startTestContext();
  });
  after(async () => {
    await ctx.close();
  });

  const create = (body: unknown, partner?: TestPartner) =>
    ctx.signed({ method: "POST", url: "/v1/partner/clients", body, ...(partner ? { partner } : {}) });

  /** The request fails with a 422 carrying exactly these (loc, type) pairs; nothing changes. */
  async function expect422(body: unknown, expected: [Loc, string][], why = ""): Promise<void> {
    const before_ = await clientsState(ctx.services.database.db);
    const res = await create(body);
    assert.equal(res.statusCode, 422, `${why}: ${res.body}`);
    const json = res.json();
    assert.equal(json.code, 422);
    assert.equal(json.msg, "Validation Error");
    assert.deepEqual(
      json.msg_detail.map((d: { loc: Loc; type: string }) => [d.loc, d.type]),
      expected,
      why,
    );
    for (const d of json.msg_detail) assert.equal(typeof d.msg, "string");
    assert.deepEqual(await clientsState(ctx.services.database.db), before_, `${why}: state changed`);
  }

  /** The request fails with this application code (HTTP 400, msg_detail null); nothing changes. */
  async function expectCode(body: unknown, code: number, why = ""): Promise<void> {
    const before_ = await clientsState(ctx.services.database.db);
    const res = await create(body);
    assertCode(res, code, why);
    assert.deepEqual(await clientsState(ctx.services.database.db), before_, `${why}: state changed`);
  }

  function assertCode(res: LightMyRequestResponse, code: number, why = ""): void {
    assert.equal(res.statusCode, 400, `${why}: ${res.body}`);
    assert.equal(res.json().code, code, `${why}: ${res.body}`);
    assert.equal(typeof res.json().msg, "string");
    assert.equal(res.json().msg_detail, null);
  }

  async function expectCreated(body: Body, why = ""): Promise<Record<string, unknown>> {
    const res = await create(body);
    assert.equal(res.statusCode, 201, `${why}: ${res.body}`);
    return res.json().result;
  }

  test("201 {result: client}: every field as sent, verified, active, verified_at and created_at from the clock", async () => {
    const body = fresh({
      national_number: "NAT-1",
      residency_id: "ae",
      citizenship_id: "in",
      place_of_birth_id: "in",
      residency_visa_number: "VISA-1",
      residency_visa_doe: "2028-06-30",
      account_purpose: ["short_term_trading", "cross_border_transactions"],
    });
    const res = await create(body);
    assert.equal(res.statusCode, 201, res.body);
    const now = isoFromMs(ctx.clock.nowMs());
    const { id, ...rest } = res.json().result;
    assert.ok(Number.isInteger(id) && id > 0);
    assert.deepEqual(rest, {
      partner_client_id: body.partner_client_id,
      account_type: "personal",
      name: body.name,
      birth_date: "1990-05-17",
      status: "verified",
      active: true,
      email: body.email,
      phone: body.phone,
      residency_id: "ae",
      citizenship_id: "in",
      place_of_birth_id: "in",
      national_number: "NAT-1",
      government_id_number: body.government_id_number,
      government_id_doe: "2030-01-31",
      residency_visa_number: "VISA-1",
      residency_visa_doe: "2028-06-30",
      address: body.address,
      employment: body.employment,
      trading_volume: "1000_10000",
      account_purpose: ["short_term_trading", "cross_border_transactions"],
      created_at: now,
      verified_at: now,
    });
    const read = await ctx.signed({ method: "GET", url: `/v1/partner/clients/${body.partner_client_id}/` });
    assert.deepEqual(read.json().result, res.json().result);
  });

  test("optional fields may be absent or null; name may be null; absent employment fields read as null", async () => {
    const absent = fresh({ name: null });
    delete absent.national_number;
    const a = await expectCreated(absent);
    assert.equal(a.name, null);
    assert.equal(a.national_number, null);
    assert.equal(a.residency_visa_number, null);
    assert.equal(a.residency_visa_doe, null);
    const b = await expectCreated(
      fresh({ national_number: null, residency_visa_number: null, residency_visa_doe: null }),
    );
    assert.equal(b.residency_visa_doe, null);
    const c = await expectCreated(
      fresh({
        employment: { status: "self_employed", company: "Own", job_industry: "retail", job_title: "Owner" },
      }),
    );
    assert.deepEqual(c.employment, {
      status: "self_employed",
      company: "Own",
      job_industry: "retail",
      job_level: null,
      job_title: "Owner",
    });
  });

  test("each required field, and each address subfield, absent: 422 missing at its location", async () => {
    const required = [
      "partner_client_id",
      "account_type",
      "name",
      "birth_date",
      "email",
      "phone",
      "residency_id",
      "citizenship_id",
      "place_of_birth_id",
      "government_id_number",
      "government_id_doe",
      "address",
      "employment",
      "trading_volume",
      "account_purpose",
    ];
    for (const field of required) {
      const body = fresh();
      delete body[field];
      await expect422(body, [[["body", field], "missing"]], field);
    }
    for (const sub of ["street", "city", "postal_code", "unit"]) {
      const body = fresh();
      const address = { ...(body.address as Body) };
      delete address[sub];
      await expect422({ ...body, address }, [[["body", "address", sub], "missing"]], sub);
    }
    const body = fresh();
    await expect422(
      { ...body, employment: { company: "Acme" } },
      [[["body", "employment", "status"], "missing"]],
      "employment.status",
    );
  });

  test("null where the contract does not allow it, and wrong JSON types: 422", async () => {
    for (const field of ["partner_client_id", "email", "phone", "government_id_number", "trading_volume"]) {
      await expect422(fresh({ [field]: null }), [[["body", field], "string_type"]], `${field} null`);
    }
    await expect422(fresh({ birth_date: null }), [[["body", "birth_date"], "string_type"]]);
    await expect422(fresh({ name: 42 }), [[["body", "name"], "string_type"]]);
    await expect422(fresh({ address: "1 Main St" }), [[["body", "address"], "model_attributes_type"]]);
    await expect422(fresh({ account_purpose: "long_term_investment" }), [
      [["body", "account_purpose"], "list_type"],
    ]);
    await expect422(fresh({ address: { street: 1, city: "c", postal_code: "p", unit: "u" } }), [
      [["body", "address", "street"], "string_type"],
    ]);
    for (const raw of ["[]", '"x"', "null", "{"]) {
      const before_ = await clientsState(ctx.services.database.db);
      const res = await create(raw);
      assert.equal(res.statusCode, 422, raw);
      assert.deepEqual(res.json().msg_detail[0].loc, ["body"], raw);
      assert.deepEqual(await clientsState(ctx.services.database.db), before_);
    }
  });

  test("account_type: only personal is creatable; anything else is a 422", async () => {
    for (const value of ["corporate", "Personal", "", 1, null]) {
      const res = await create(fresh({ account_type: value }));
      assert.equal(res.statusCode, 422, String(value));
      assert.deepEqual(res.json().msg_detail[0].loc, ["body", "account_type"]);
    }
    assert.deepEqual((await create(fresh({ account_type: "corporate" }))).json().msg_detail, [
      { loc: ["body", "account_type"], msg: "Input should be 'personal'", type: "literal_error" },
    ]);
  });

  test("string fields (docs/reference.md §8): 255 characters are accepted and stored whole, 256 are a 422 string_too_long", async () => {
    const paths: Loc[] = [
      ["name"],
      ["partner_client_id"],
      ["national_number"],
      ["government_id_number"],
      ["residency_visa_number"],
      ["address", "street"],
      ["address", "city"],
      ["address", "postal_code"],
      ["address", "unit"],
      ["employment", "company"],
      ["employment", "job_industry"],
      ["employment", "job_level"],
      ["employment", "job_title"],
      ["trading_volume"],
    ];
    const withValue = (path: Loc, value: string): Body => {
      const body = fresh();
      if (path.length === 1) return { ...body, [path[0]!]: value };
      return { ...body, [path[0]!]: { ...(body[path[0]!] as Body), [path[1]!]: value } };
    };
    for (const path of paths) {
      const ok = withValue(path, `${path.join(".")}:`.padEnd(255, "x"));
      const created = await expectCreated(ok, `${path.join(".")} 255`);
      const stored = path.length === 1 ? created[path[0]!] : (created[path[0]!] as Body)[path[1]!];
      assert.equal((stored as string).length, 255);
      await expect422(
        withValue(path, "y".repeat(256)),
        [[["body", ...path], "string_too_long"]],
        `${path.join(".")} 256`,
      );
    }
    // Characters, not bytes or UTF-16 units: 255 emoji are 255 characters.
    const emoji = await expectCreated(fresh({ name: "😀".repeat(255) }));
    assert.equal([...(emoji.name as string)].length, 255);
    await expect422(fresh({ name: "😀".repeat(256) }), [[["body", "name"], "string_too_long"]]);
    // partner_client_id and government_id_number cannot be empty (they identify the client).
    await expect422(fresh({ partner_client_id: "" }), [[["body", "partner_client_id"], "string_too_short"]]);
    await expect422(fresh({ government_id_number: "" }), [
      [["body", "government_id_number"], "string_too_short"],
    ]);
  });

  test("a NUL byte or a lone surrogate in any string is a 422 at its location, never a database error", async () => {
    const cases: [Body, Loc][] = [
      [{ name: "Ana\u0000Lima" }, ["name"]],
      [{ partner_client_id: "p\u0000" }, ["partner_client_id"]],
      [{ email: "a\u0000@example.com" }, ["email"]],
      [{ government_id_number: "\u0000" }, ["government_id_number"]],
      [{ trading_volume: "1000\u0000" }, ["trading_volume"]],
      [{ national_number: "\u0000" }, ["national_number"]],
      [{ address: { street: "x\u0000", city: "c", postal_code: "p", unit: "u" } }, ["address", "street"]],
      [
        {
          employment: {
            status: "employed",
            company: "A\u0000",
            job_industry: "i",
            job_level: "l",
            job_title: "t",
          },
        },
        ["employment", "company"],
      ],
      [{ account_purpose: ["long_term_investment\u0000"] }, ["account_purpose", 0]],
    ];
    for (const [over, path] of cases) {
      await expect422(fresh(over), [[["body", ...path], "string_nul"]], path.join("."));
    }
    const lone = JSON.stringify(fresh()).replace('"Client Number', '"\\ud800Client Number');
    await expect422(lone, [[["body", "name"], "string_unicode"]], "lone surrogate");
  });

  test("e-mail: a valid address (422 email_parsing otherwise)", async () => {
    for (const email of ["no-at-sign", "a@b", "a b@example.com", "a@@example.com", "@example.com", ""]) {
      await expect422(fresh({ email }), [[["body", "email"], "email_parsing"]], email);
    }
    await expectCreated(fresh({ email: "Ana.Lima+kyc@Example.COM" }));
  });

  test("phone: E.164 with a leading plus, valid per libphonenumber, stored and compared in E.164", async () => {
    for (const phone of [
      "971500000001",
      "+971 50 000 0001",
      "00971500000001",
      "+1234",
      "+0123456789",
      "+97150000000123456",
      "",
    ]) {
      await expect422(fresh({ phone }), [[["body", "phone"], "value_error"]], phone);
    }
    // A national trunk zero after the country code is dropped: the E.164 form is stored.
    const created = await expectCreated(fresh({ phone: "+9710509876543" }));
    assert.equal(created.phone, "+971509876543");
    await expectCode(fresh({ phone: "+971509876543" }), 2028, "same number in E.164");
    await expectCreated(fresh({ phone: "+14155552671" }));
  });

  test("dates: real calendar dates as YYYY-MM-DD (422 otherwise)", async () => {
    for (const [field, value] of [
      ["birth_date", "2001-02-29"],
      ["birth_date", "1990-5-17"],
      ["birth_date", "17/05/1990"],
      ["birth_date", "1990-05-17T00:00:00Z"],
      ["birth_date", "0000-01-01"],
      ["government_id_doe", "2030-02-30"],
      ["government_id_doe", "2030-13-01"],
      ["residency_visa_doe", "2030-04-31"],
    ] as const) {
      await expect422(fresh({ [field]: value }), [[["body", field], "date_from_datetime_parsing"]], value);
    }
    const leap = await expectCreated(fresh({ birth_date: "2000-02-29" }));
    assert.equal(leap.birth_date, "2000-02-29");
  });

  test("country ids: malformed is a 422; unknown or unsupported is 2022, 2023, 2024", async () => {
    for (const field of ["residency_id", "citizenship_id", "place_of_birth_id"]) {
      for (const bad of ["AE", "are", "a", "", "a1", "é"]) {
        await expect422(
          fresh({ [field]: bad }),
          [[["body", field], "string_pattern_mismatch"]],
          `${field}=${bad}`,
        );
      }
    }
    // Unknown (zz) and restricted (ir, kp) ids; the visa is given so that rule 2025 stays silent.
    const visa = { residency_visa_number: "V-1", residency_visa_doe: "2030-01-01" };
    for (const id of ["zz", "ir", "kp"]) {
      await expectCode(fresh({ ...visa, residency_id: id }), 2022, `residency ${id}`);
      await expectCode(fresh({ ...visa, citizenship_id: id }), 2023, `citizenship ${id}`);
      await expectCode(fresh({ place_of_birth_id: id }), 2024, `place of birth ${id}`);
    }
    const abroad = await expectCreated(
      fresh({ ...visa, residency_id: "sa", citizenship_id: "gb", place_of_birth_id: "fr" }),
    );
    assert.deepEqual(
      [abroad.residency_id, abroad.citizenship_id, abroad.place_of_birth_id],
      ["sa", "gb", "fr"],
    );
  });

  test("visa rule: residency other than citizenship needs both visa fields (2025)", async () => {
    const abroad = { residency_id: "ae", citizenship_id: "gb" };
    await expectCode(fresh(abroad), 2025, "neither");
    await expectCode(fresh({ ...abroad, residency_visa_number: "V-1" }), 2025, "number only");
    await expectCode(fresh({ ...abroad, residency_visa_doe: "2030-01-01" }), 2025, "expiry only");
    await expectCode(
      fresh({ ...abroad, residency_visa_number: "V-1", residency_visa_doe: null }),
      2025,
      "expiry null",
    );
    await expectCode(
      fresh({ ...abroad, residency_visa_number: "", residency_visa_doe: "2030-01-01" }),
      2025,
      "empty",
    );
    const ok = await expectCreated(
      fresh({ ...abroad, residency_visa_number: "V-1", residency_visa_doe: "2030-01-01" }),
    );
    assert.equal(ok.residency_visa_number, "V-1");
  });

  test("legal age (2021), judged on the injected clock's UTC day; 29 February comes of age on 1 March", async () => {
    const saved = ctx.clock.nowMs();
    try {
      ctx.clock.set(Date.UTC(2026, 10, 21, 12, 0, 0));
      await expectCreated(fresh({ birth_date: "2008-11-21" }), "18 today");
      await expectCode(fresh({ birth_date: "2008-11-22" }), 2021, "18 tomorrow");
      await expectCode(fresh({ birth_date: "2026-11-21" }), 2021, "born today");
      await expectCode(fresh({ birth_date: "2030-01-01" }), 2021, "born in the future");
      ctx.clock.set(Date.UTC(2026, 1, 28, 23, 59, 0));
      await expectCode(fresh({ birth_date: "2008-02-29" }), 2021, "leapling on 28 February");
      ctx.clock.set(Date.UTC(2026, 2, 1, 0, 0, 0));
      await expectCreated(fresh({ birth_date: "2008-02-29" }), "leapling on 1 March");
    } finally {
      ctx.clock.set(saved);
    }
  });

  test("the legal age is the service's setting (LEGAL_AGE, 18 by default)", async () => {
    assert.equal(ctx.config.legalAgeYears, 18);
    const db = ctx.services.database.db;
    const strict = new ClientsService(db, ctx.clock, { legalAgeYears: 21 });
    const year = new Date(ctx.clock.nowMs()).getUTCFullYear();
    const input = (k: number, age: number) => {
      const body = fresh({ birth_date: `${year - age}-01-01` });
      const checked = checkClientFields(body as unknown as Parameters<typeof checkClientFields>[0]);
      assert.ok(checked.ok);
      return {
        ...checked.fields,
        partnerClientId: `legal-age-${k}`,
        birthDate: String(body.birth_date),
        placeOfBirthId: "ae",
      };
    };
    assert.deepEqual(await strict.create(ctx.partner.id, input(1, 20)), {
      ok: false,
      error: "client_under_age",
    });
    assert.equal((await strict.create(ctx.partner.id, input(2, 21))).ok, true);
  });

  test("uniqueness within the partner: 2026, 2027 (any letter case), 2028, 2016; the existing client is untouched", async () => {
    const first = fresh();
    const created = await expectCreated(first);
    const dup = (over: Body) => fresh(over);
    await expectCode(dup({ partner_client_id: first.partner_client_id }), 2026, "partner_client_id");
    await expectCode(dup({ email: first.email }), 2027, "email");
    await expectCode(dup({ email: String(first.email).toUpperCase() }), 2027, "email, other case");
    await expectCode(dup({ phone: first.phone }), 2028, "phone");
    await expectCode(dup({ government_id_number: first.government_id_number }), 2016, "government id");
    const read = await ctx.signed({ method: "GET", url: `/v1/partner/clients/${first.partner_client_id}/` });
    assert.deepEqual(read.json().result, created);
  });

  test("another partner may use the same partner_client_id, e-mail, phone and government id", async () => {
    const first = fresh();
    await expectCreated(first);
    const other = await ctx.addPartner();
    const res = await create(first, other);
    assert.equal(res.statusCode, 201, res.body);
    assert.equal(res.json().result.partner_client_id, first.partner_client_id);
  });

  test("order of checks: 422 → 2026 → 2027 → 2028 → 2016 → 2021 → 2022 → 2023 → 2024 → 2025", async () => {
    const taken = fresh();
    await expectCreated(taken);
    const everything: Body = {
      partner_client_id: taken.partner_client_id,
      email: taken.email,
      phone: taken.phone,
      government_id_number: taken.government_id_number,
      birth_date: "2020-01-01",
      residency_id: "zz",
      citizenship_id: "kp",
      place_of_birth_id: "ir",
    };
    await expect422(
      fresh({ ...everything, employment: { status: "employed" } }),
      [
        [["body", "employment", "company"], "missing"],
        [["body", "employment", "job_industry"], "missing"],
        [["body", "employment", "job_level"], "missing"],
        [["body", "employment", "job_title"], "missing"],
      ],
      "422 first",
    );
    // Each step mends the failure reported by the previous one, revealing the next check.
    const body: Body = { ...fresh(), ...everything };
    const mend = fresh();
    const steps: [Body, number][] = [
      [{}, 2026],
      [{ partner_client_id: mend.partner_client_id }, 2027],
      [{ email: mend.email }, 2028],
      [{ phone: mend.phone }, 2016],
      [{ government_id_number: mend.government_id_number }, 2021],
      [{ birth_date: "1990-01-01" }, 2022],
      [{ residency_id: "gb" }, 2023],
      [{ citizenship_id: "ae" }, 2024],
      [{ place_of_birth_id: "ae" }, 2025],
    ];
    for (const [fix, code] of steps) {
      Object.assign(body, fix);
      await expectCode(body, code, `after ${Object.keys(fix).join(", ") || "nothing"}`);
    }
    await expectCreated({ ...body, residency_visa_number: "V-9", residency_visa_doe: "2030-01-01" });
  });

  test("employment table: every row, each required field absent or null is 422 missing, a disallowed one given is 422 extra_forbidden", async () => {
    const full = {
      company: "Acme",
      job_industry: "banking_financial_services",
      job_level: "manager",
      job_title: "Analyst",
    };
    for (const status of employmentStatuses) {
      const rules = employmentRules[status];
      const allowed = Object.fromEntries(
        Object.entries(full).filter(([k]) => !(rules.disallowed as readonly string[]).includes(k)),
      );
      const ok = await expectCreated(fresh({ employment: { status, ...allowed } }), `${status} complete`);
      assert.equal((ok.employment as Body).status, status);
      for (const field of rules.required) {
        const absent: Body = { status, ...allowed };
        delete absent[field];
        await expect422(
          fresh({ employment: absent }),
          [[["body", "employment", field], "missing"]],
          `${status} without ${field}`,
        );
        await expect422(
          fresh({ employment: { status, ...allowed, [field]: null } }),
          [[["body", "employment", field], "missing"]],
          `${status} with ${field} null`,
        );
      }
      for (const field of rules.disallowed) {
        await expect422(
          fresh({ employment: { status, ...allowed, [field]: "senior" } }),
          [[["body", "employment", field], "extra_forbidden"]],
          `${status} with ${field}`,
        );
        // Sent as null, a disallowed field is simply absent.
        await expectCreated(
          fresh({ employment: { status, ...allowed, [field]: null } }),
          `${status} ${field} null`,
        );
      }
    }
    assert.deepEqual(employmentRules.self_employed, {
      required: ["company", "job_industry", "job_title"],
      disallowed: ["job_level"],
    });
    for (const status of ["employed", "unemployed", "housewife", "retired"] as const) {
      assert.deepEqual(employmentRules[status], {
        required: ["company", "job_industry", "job_level", "job_title"],
        disallowed: [],
      });
    }
    await expect422(fresh({ employment: { ...full, status: "student" } }), [
      [["body", "employment", "status"], "enum"],
    ]);
  });

  test("account_purpose: at least one item, allowed values only; repeats are stored once", async () => {
    await expect422(fresh({ account_purpose: [] }), [[["body", "account_purpose"], "too_short"]]);
    await expect422(fresh({ account_purpose: ["gambling"] }), [[["body", "account_purpose", 0], "enum"]]);
    await expect422(fresh({ account_purpose: ["long_term_investment", "Short_Term_Trading"] }), [
      [["body", "account_purpose", 1], "enum"],
    ]);
    const all = [
      "short_term_trading",
      "long_term_investment",
      "converting_crypto_to_fiat",
      "cross_border_transactions",
    ];
    assert.deepEqual((await expectCreated(fresh({ account_purpose: all }))).account_purpose, all);
    const repeated = await expectCreated(
      fresh({ account_purpose: ["long_term_investment", "short_term_trading", "long_term_investment"] }),
    );
    assert.deepEqual(repeated.account_purpose, ["long_term_investment", "short_term_trading"]);
  });

  test("unknown fields are ignored: status, active, id or verified_at in the body change nothing", async () => {
    const created = await expectCreated(
      fresh({
        id: 1,
        status: "rejected",
        active: false,
        verified_at: null,
        created_at: "2000-01-01T00:00:00Z",
        extra: 1,
      }),
    );
    assert.notEqual(created.id, 1);
    assert.equal(created.status, "verified");
    assert.equal(created.active, true);
    assert.notEqual(created.verified_at, null);
  });

  test("two simultaneous creates with the same e-mail, phone, government id or partner_client_id: one client, one error, never a 500", async () => {
    const races: [string, number][] = [
      ["email", 2027],
      ["phone", 2028],
      ["government_id_number", 2016],
      ["partner_client_id", 2026],
    ];
    for (let round = 0; round < 3; round++) {
      for (const [field, code] of races) {
        const a = fresh();
        const b = fresh({ [field]: a[field] });
        const before_ = (await clientsState(ctx.services.database.db)).clients;
        const results = await Promise.all([create(a), create(b)]);
        const statuses = results.map((r) => r.statusCode).sort();
        assert.deepEqual(statuses, [201, 400], `${field}: ${results.map((r) => r.body).join(" | ")}`);
        const refused = results.find((r) => r.statusCode === 400)!;
        assert.equal(refused.json().code, code, field);
        assert.equal((await clientsState(ctx.services.database.db)).clients, before_ + 1);
      }
    }
  });
});
