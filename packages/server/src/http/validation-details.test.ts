// The 422 details docs/errors.md ("Validation details (422)") names by example, each answered
// exactly as written there, with nothing changed; and a key repeated in a JSON body, which
// docs/reference.md §1.1 says is read as JSON.parse reads it (the last one wins).

import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { clientPayload, clientsState, insertClient } from "../testing/fixtures.ts";
import { startTestContext, type TestContext } from "../testing/harness.ts";
import { moneyState } from "../testing/money-state.ts";

describe("validation details as documented", () => {
  let ctx: TestContext;
  let client: string;
  before(async () => {
    ctx = await startTestContext();
    client = (await insertClient(ctx.services.database.db, ctx.partner.id, 1)).partnerClientId;
  });
  after(async () => {
    await ctx.close();
  });

  const state = async () => ({
    money: await moneyState(ctx.services.database.db),
    clients: await clientsState(ctx.services.database.db),
  });
  const deposit = (ref: string) =>
    JSON.stringify({ partner_client_id: client, asset_id: "AED", amount: "1", partner_order_ref: ref });

  async function expect422(
    request: Parameters<TestContext["signed"]>[0],
    detail: { loc: (string | number)[]; msg: string; type: string }[],
    why: string,
  ): Promise<void> {
    const before_ = await state();
    const res = await ctx.signed(request);
    assert.equal(res.statusCode, 422, `${why}: ${res.body}`);
    const body = res.json();
    assert.equal(body.code, 422, why);
    // Compared by key, whatever order the entry's keys were written in.
    assert.deepEqual(
      body.msg_detail.map((d: Record<string, unknown>) => ({ loc: d.loc, msg: d.msg, type: d.type })),
      detail,
      why,
    );
    assert.deepEqual(await state(), before_, `${why}: state changed`);
  }

  test("a body that is not an object, or not sent as JSON, is model_attributes_type at the body", async () => {
    const notObject = [
      {
        loc: ["body"],
        msg: "Input should be a valid dictionary or object to extract fields from",
        type: "model_attributes_type",
      },
    ];
    for (const [why, body, contentType] of [
      ["a list", "[1]", "application/json"],
      ["null", "null", "application/json"],
      ["a string", '"x"', "application/json"],
      ["empty", "", "application/json"],
      ["text/plain", deposit("mat-1"), "text/plain"],
      ["form", deposit("mat-2"), "application/x-www-form-urlencoded"],
    ] as const) {
      await expect422(
        { method: "POST", url: "/v1/partner/deposits", body, headers: { "content-type": contentType } },
        notObject,
        why,
      );
    }
    await expect422({ method: "POST", url: "/v1/partner/deposits", body: "" }, notObject, "no body");
  });

  test("a Content-Type that is not one media type is json_invalid, 'Request body could not be read'", async () => {
    for (const contentType of ["", "application/json, text/plain"]) {
      await expect422(
        {
          method: "POST",
          url: "/v1/partner/deposits",
          body: deposit("ct-1"),
          headers: { "content-type": contentType },
        },
        [{ loc: ["body"], msg: "Request body could not be read", type: "json_invalid" }],
        JSON.stringify(contentType),
      );
    }
  });

  test("bool_type, string_pattern_mismatch, date_from_datetime_parsing, too_long", async () => {
    await expect422(
      { method: "PUT", url: `/v1/partner/clients/${client}/activation`, body: { active: "false" } },
      [{ loc: ["body", "active"], msg: "Input should be a valid boolean", type: "bool_type" }],
      "activation",
    );
    await expect422(
      {
        method: "POST",
        url: "/v1/partner/quotes/execute",
        body: { partner_client_id: client, token: "qt_abc" },
      },
      [
        {
          loc: ["body", "token"],
          msg: "Input should be a quote token (qt_ and 43 base64url characters)",
          type: "string_pattern_mismatch",
        },
      ],
      "token",
    );
    const create = (over: Record<string, unknown>) =>
      ({ method: "POST", url: "/v1/partner/clients", body: clientPayload(70, over) }) as const;
    await expect422(
      create({ residency_id: "AE" }),
      [
        {
          loc: ["body", "residency_id"],
          msg: "String should match pattern '^[a-z]{2}$'",
          type: "string_pattern_mismatch",
        },
      ],
      "residency",
    );
    await expect422(
      create({ birth_date: "1990-02-30" }),
      [
        {
          loc: ["body", "birth_date"],
          msg: "Input should be a valid date in the format YYYY-MM-DD",
          type: "date_from_datetime_parsing",
        },
      ],
      "birth date",
    );
    await expect422(
      create({ account_purpose: Array(17).fill("short_term_trading") }),
      [{ loc: ["body", "account_purpose"], msg: "List should have at most 16 items", type: "too_long" }],
      "account purpose",
    );
  });

  test("a key repeated in a body: the last one wins", async () => {
    const res = await ctx.signed({
      method: "POST",
      url: "/v1/partner/deposits",
      body: `{"partner_client_id":"${client}","asset_id":"AED","amount":"5","amount":"7","partner_order_ref":"dup-1"}`,
      headers: { "content-type": "application/json" },
    });
    assert.equal(res.statusCode, 200, res.body);
    assert.equal(res.json().result.debit, "7.00000000");
  });
});
