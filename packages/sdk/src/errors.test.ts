// Error mapping: every wire failure becomes the class that names it, carrying status, code, msg
// and msg_detail, with a message that says how to fix the request. Checked against the protocol's
// catalog, so a new code cannot reach partners as an unnamed error.

import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { type ErrorName, errorCatalog, errorNames } from "@counterpart/protocol";
import { catalogName, errorFromResponse } from "./errors.ts";
import {
  ApiError,
  AuthenticationError,
  ConflictError,
  CounterpartError,
  errorHint,
  NotFoundError,
  ServerError,
  ValidationError,
} from "./index.ts";
import { errorReply, fakeClient } from "./test-fakes.ts";

const info = { method: "POST", target: "/v1/partner/quotes", requestId: "req-1" };

function fromWire(status: number, body: unknown, target = info.target) {
  return errorFromResponse({ status, text: JSON.stringify(body) }, { ...info, target });
}

describe("error mapping", () => {
  test("401: AuthenticationError listing what to check", () => {
    const err = fromWire(401, { code: 401, msg: "Unauthorized", msg_detail: null });
    assert.ok(err instanceof AuthenticationError);
    assert.ok(err instanceof CounterpartError);
    assert.equal(err.name, "AuthenticationError");
    assert.equal(err.status, 401);
    assert.equal(err.code, 401);
    assert.equal(err.msg, "Unauthorized");
    assert.equal(err.msgDetail, null);
    assert.equal(err.requestId, "req-1");
    assert.match(
      err.message,
      /^POST \/v1\/partner\/quotes: Unauthorized \(HTTP 401\)\. To fix: check the partner id/,
    );
    assert.match(err.message, /clock/);
    assert.match(err.message, /allow-list/);
  });

  test("404: NotFoundError", () => {
    const err = fromWire(404, { code: 404, msg: "Not Found", msg_detail: null }, "/v1/partner/orders/9");
    assert.ok(err instanceof NotFoundError);
    assert.match(
      err.message,
      /^POST \/v1\/partner\/orders\/9: Not Found \(HTTP 404\)\. To fix: check the id/,
    );
  });

  test("422: ValidationError with typed field errors listed in the message", () => {
    const detail = [
      { loc: ["body", "amount"], msg: "Input should be greater than 0", type: "greater_than" },
      { loc: ["body", "employment", "job_level"], msg: "Field required", type: "missing" },
    ];
    const err = fromWire(422, { code: 422, msg: "Validation Error", msg_detail: detail });
    assert.ok(err instanceof ValidationError);
    assert.deepEqual(err.fieldErrors, detail);
    assert.deepEqual(err.msgDetail, detail);
    assert.match(err.message, /body\.amount: Input should be greater than 0 \[greater_than\]/);
    assert.match(err.message, /body\.employment\.job_level: Field required \[missing\]/);
    assert.match(err.message, /To fix: fix the fields listed/);
  });

  test("409 2020: ConflictError with the reference that was sent", () => {
    const err = errorFromResponse(
      {
        status: 409,
        text: JSON.stringify({ code: 2020, msg: errorCatalog.duplicate_order_ref.msg, msg_detail: null }),
      },
      { ...info, target: "/v1/partner/deposits", body: { partner_order_ref: "dep-9" } },
    );
    assert.ok(err instanceof ConflictError);
    assert.equal(err.code, 2020);
    assert.equal(err.partnerOrderRef, "dep-9");
    assert.match(err.message, /\(HTTP 409, code 2020\).*orders\.getByRef/);
  });

  test("400 application codes: ApiError with the catalog name and a hint", () => {
    const err = fromWire(400, { code: 2010, msg: "The client is deactivated", msg_detail: null });
    assert.ok(err instanceof ApiError);
    assert.equal(err.errorName, "client_deactivated");
    assert.equal(err.code, 2010);
    assert.match(
      err.message,
      /The client is deactivated \(HTTP 400, code 2010\)\. To fix: reactivate the client/,
    );
  });

  test("quote errors expose the quote and the limit of msg_detail", () => {
    const quote = {
      market_price: "250000.00000000",
      base_amount: "100.00000000",
      quote_amount: "25000000.00000000",
      fee_amount: "0E-8",
      vat_percentage: null,
      vat_amount: "0E-8",
      lifetime: 15,
      token: null,
    };
    const err = fromWire(400, {
      code: 4003,
      msg: "Amount exceeds the maximum allowed",
      msg_detail: { limit: "10", quote },
    });
    assert.ok(err instanceof ApiError);
    assert.equal(err.errorName, "amount_above_maximum");
    assert.equal(err.limit, "10");
    assert.deepEqual(err.quote, quote);
    const funds = fromWire(400, { code: 3005, msg: "Insufficient funds", msg_detail: { quote } });
    assert.ok(funds instanceof ApiError);
    assert.equal(funds.errorName, "insufficient_funds");
    assert.deepEqual(funds.quote, quote);
    assert.equal(funds.limit, null);
  });

  test("3005 is told apart by msg, and by path when msg is unfamiliar", () => {
    assert.equal(
      catalogName(3005, "Insufficient funds for payment", "/v1/partner/quotes"),
      "insufficient_funds_for_payment",
    );
    assert.equal(catalogName(3005, "Insufficient funds", "/v1/partner/withdrawals"), "insufficient_funds");
    assert.equal(
      catalogName(3005, "other wording", "/v1/partner/withdrawals"),
      "insufficient_funds_for_payment",
    );
    assert.equal(catalogName(3005, "other wording", "/v1/partner/quotes"), "insufficient_funds");
    assert.equal(catalogName(9999, "new", "/"), null);
  });

  test("5xx: ServerError; a body that is not the service's still gives a usable error", () => {
    const err = errorFromResponse({ status: 502, text: "<html>Bad Gateway</html>" }, info);
    assert.ok(err instanceof ServerError);
    assert.equal(err.status, 502);
    assert.equal(err.code, 502);
    assert.equal(err.msg, null);
    assert.equal(err.message, "POST /v1/partner/quotes: HTTP 502");
  });

  test("an unknown 400 code is an ApiError without a catalog name", () => {
    const err = fromWire(400, { code: 2999, msg: "Something new", msg_detail: null });
    assert.ok(err instanceof ApiError);
    assert.equal(err.errorName, null);
    assert.equal(err.code, 2999);
    assert.match(err.message, /Something new \(HTTP 400, code 2999\)$/);
  });

  test("every catalog entry maps to the class of its status, with its own name and a hint", () => {
    const classFor = (status: number) =>
      status === 401
        ? AuthenticationError
        : status === 404
          ? NotFoundError
          : status === 422
            ? ValidationError
            : status === 409
              ? ConflictError
              : status >= 500
                ? ServerError
                : ApiError;
    for (const name of errorNames) {
      const entry = errorCatalog[name];
      const target = name === "insufficient_funds_for_payment" ? "/v1/partner/withdrawals" : info.target;
      const err = fromWire(entry.status, { code: entry.code, msg: entry.msg, msg_detail: null }, target);
      assert.ok(err instanceof classFor(entry.status), `${name} → ${err.name}`);
      assert.equal(catalogName(entry.code, entry.msg, target), name);
      if (err instanceof ApiError) assert.equal(err.errorName, name);
      assert.ok(errorHint(name as ErrorName).length > 20, `${name} has a hint`);
      assert.ok(err.message.includes(errorHint(name)), `${name}: the message carries the hint`);
    }
  });

  test("errors thrown by a call carry the request and the service's request id", async () => {
    const fake = fakeClient(
      () =>
        new Response(JSON.stringify({ code: 2008, msg: "Invalid client ID", msg_detail: null }), {
          status: 400,
          headers: { "x-request-id": "abc-123" },
        }),
    );
    await assert.rejects(fake.client.balances.list("nobody"), (err: unknown) => {
      assert.ok(err instanceof ApiError);
      assert.equal(err.errorName, "invalid_client");
      assert.equal(err.method, "GET");
      assert.equal(err.target, "/v1/partner/balances?partner_client_id=nobody");
      assert.equal(err.requestId, "abc-123");
      return true;
    });
    const fake2 = fakeClient(() => errorReply(400, 2012, "Invalid asset"));
    await assert.rejects(fake2.client.balances.get("c", "XYZ"), /Invalid asset.*assets\.list\(\)/);
  });
});
