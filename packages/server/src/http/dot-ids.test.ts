// partner_client_id and partner_order_ref (docs/reference.md §2.1, §2.3, §5.2; docs/decisions.md
// "Hardening"). An id of `.` or `..` could be created but never named in a path (dot segments are
// refused there), so creating one is a 422 that changes nothing.

import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import type { LightMyRequestResponse } from "fastify";
import { clientPayload, clientsState, insertClient } from "../testing/fixtures.ts";
import { startTestContext, type TestContext } from "../testing/harness.ts";
import { moneyState } from "../testing/money-state.ts";

describe("ids a path cannot name", () => {
  let ctx: TestContext;
  let client: string;
  before(async () => {
    ctx = await startTestContext();
    client = (await insertClient(ctx.services.database.db, ctx.partner.id, 1)).partnerClientId;
    const funded = await ctx.signed({
      method: "POST",
      url: "/v1/partner/deposits",
      body: { partner_client_id: client, asset_id: "AED", amount: "100000", partner_order_ref: "fund-1" },
    });
    assert.equal(funded.statusCode, 200, funded.body);
  });
  after(async () => {
    await ctx.close();
  });

  const state = async () => ({
    money: await moneyState(ctx.services.database.db),
    clients: await clientsState(ctx.services.database.db),
  });

  /** A 422 with exactly one detail, at `field` of the body, of the dot-segment rule. */
  function assertDotRefused(res: LightMyRequestResponse, field: string, why: string): void {
    assert.equal(res.statusCode, 422, `${why}: ${res.body}`);
    const body = res.json();
    assert.equal(body.code, 422, why);
    assert.equal(body.msg, "Validation Error", why);
    assert.deepEqual(
      body.msg_detail.map((d: { loc: unknown; type: string }) => [d.loc, d.type]),
      [[["body", field], "string_pattern_mismatch"]],
      why,
    );
    assert.match(body.msg_detail[0].msg, /'\.' or '\.\.'/, why);
  }

  test("a client whose partner_client_id is . or .. is a 422; nothing is created", async () => {
    for (const [n, id] of [
      [501, "."],
      [502, ".."],
    ] as const) {
      const before_ = await state();
      const res = await ctx.signed({
        method: "POST",
        url: "/v1/partner/clients",
        body: clientPayload(n, { partner_client_id: id }),
      });
      assertDotRefused(res, "partner_client_id", id);
      assert.deepEqual(await state(), before_, `${id}: state changed`);
    }
    // Dots that are not a whole dot segment are ordinary text, and the client is addressable.
    for (const [n, id] of [
      [503, "..."],
      [504, ".a"],
      [505, "a."],
    ] as const) {
      const res = await ctx.signed({
        method: "POST",
        url: "/v1/partner/clients",
        body: clientPayload(n, { partner_client_id: id }),
      });
      assert.equal(res.statusCode, 201, `${id}: ${res.body}`);
      const read = await ctx.signed({ method: "GET", url: `/v1/partner/clients/${id}/` });
      assert.equal(read.statusCode, 200, `${id}: ${read.body}`);
      assert.equal(read.json().result.partner_client_id, id);
    }
  });

  test("a deposit or withdrawal whose partner_order_ref is . or .. is a 422; no order, no balance change", async () => {
    for (const url of ["/v1/partner/deposits", "/v1/partner/withdrawals"]) {
      for (const ref of [".", ".."]) {
        const before_ = await state();
        const res = await ctx.signed({
          method: "POST",
          url,
          body: { partner_client_id: client, asset_id: "AED", amount: "1", partner_order_ref: ref },
        });
        assertDotRefused(res, "partner_order_ref", `${url} ${ref}`);
        assert.deepEqual(await state(), before_, `${url} ${ref}: state changed`);
      }
      // The same rule for the client named in the body; the reference it carried is not used up.
      const ref = `dots-${url.slice(-8)}`;
      const before_ = await state();
      const res = await ctx.signed({
        method: "POST",
        url,
        body: { partner_client_id: "..", asset_id: "AED", amount: "1", partner_order_ref: ref },
      });
      assertDotRefused(res, "partner_client_id", url);
      assert.deepEqual(await state(), before_, `${url}: state changed`);
      const retried = await ctx.signed({
        method: "POST",
        url,
        body: { partner_client_id: client, asset_id: "AED", amount: "1", partner_order_ref: ref },
      });
      assert.equal(retried.statusCode, 200, retried.body);
      const found = await ctx.signed({ method: "GET", url: `/v1/partner/orders/ref/${ref}` });
      assert.equal(found.statusCode, 200, found.body);
      assert.equal(found.json().result.id, retried.json().result.id);
    }
  });

  test("quotes and executions refuse . and ..; a refused execution spends neither token nor reference", async () => {
    const before_ = await state();
    const quoted = await ctx.signed({
      method: "POST",
      url: "/v1/partner/quotes",
      body: { partner_client_id: ".", asset_pair: "BTC-AED", side: "buy", base_amount: "0.01" },
    });
    assertDotRefused(quoted, "partner_client_id", "quote");

    const q = await ctx.signed({
      method: "POST",
      url: "/v1/partner/quotes",
      body: { partner_client_id: client, asset_pair: "BTC-AED", side: "buy", base_amount: "0.01" },
    });
    assert.equal(q.statusCode, 200, q.body);
    const token = q.json().result.token as string;
    for (const ref of [".", ".."]) {
      const res = await ctx.signed({
        method: "POST",
        url: "/v1/partner/quotes/execute",
        body: { partner_client_id: client, token, partner_order_ref: ref },
      });
      assertDotRefused(res, "partner_order_ref", `execute ${ref}`);
    }
    const named = await ctx.signed({
      method: "POST",
      url: "/v1/partner/quotes/execute",
      body: { partner_client_id: "..", token, partner_order_ref: "buy-dots" },
    });
    assertDotRefused(named, "partner_client_id", "execute client");
    assert.deepEqual(await state(), before_, "state changed");

    const done = await ctx.signed({
      method: "POST",
      url: "/v1/partner/quotes/execute",
      body: { partner_client_id: client, token, partner_order_ref: "buy-dots" },
    });
    assert.equal(done.statusCode, 200, done.body);
    assert.equal(done.json().result.status, "completed");
    assert.equal(done.json().result.partner_order_ref, "buy-dots");
  });

  test("the filters that take a partner_client_id answer as for any unknown client", async () => {
    for (const url of [
      "/v1/partner/orders?partner_client_id=.",
      "/v1/partner/balances?partner_client_id=..",
      "/v1/partner/events?partner_client_id=.",
    ]) {
      const res = await ctx.signed({ method: "GET", url });
      assert.equal(res.statusCode, 400, `${url}: ${res.body}`);
      assert.equal(res.json().code, 2008, url);
    }
  });
});
