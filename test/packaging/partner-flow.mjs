// A partner's plain JavaScript against the installed @counterpart/sdk (no TypeScript anywhere):
// onboard a client, upload a document, deposit, quote, execute, list orders page by page, recover a
// reused partner_order_ref; every result and error carries its request id. RUN_NUMBER keeps the
// records of one run apart from another's in the same sandbox. Prints one JSON line on success.

import assert from "node:assert/strict";
import { ConflictError, Counterpart, NotFoundError, optionsFromEnv, toMoney } from "@counterpart/sdk";

const n = Number(process.env.RUN_NUMBER);
assert.ok(Number.isSafeInteger(n) && n > 0 && n < 1000, "RUN_NUMBER");
const digits = String(n).padStart(7, "0");
const pcid = `pkg-js-${n}`;

// A whole 1x1 PNG (signature, IHDR, IDAT, IEND).
const png = Buffer.from(
  "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==",
  "base64",
);
const requestIds = new Set();
const seen = (value) => {
  assert.equal(typeof value.lastResponse.requestId, "string", "every result carries its request id");
  requestIds.add(value.lastResponse.requestId);
  return value;
};

const counterpart = new Counterpart({ ...optionsFromEnv(), appInfo: "packaging-test/1" });

const client = seen(
  await counterpart.clients.create({
    partner_client_id: pcid,
    account_type: "personal",
    name: `Packaging Js ${n}`,
    birth_date: "1990-05-17",
    email: `pkg.js.${n}@example.com`,
    phone: `+97155${digits}`,
    residency_id: "ae",
    citizenship_id: "ae",
    place_of_birth_id: "ae",
    government_id_number: `784-1991-${digits}-1`,
    government_id_doe: "2030-01-31",
    address: { street: "1 Sheikh Zayed Rd", city: "Dubai", postal_code: "00000", unit: "Apt 12" },
    employment: {
      status: "employed",
      company: "Acme",
      job_industry: "banking_financial_services",
      job_level: "senior",
      job_title: "Analyst",
    },
    trading_volume: "1000_10000",
    account_purpose: ["long_term_investment"],
  }),
);
assert.equal(client.status, "verified");
assert.equal(client.active, true);
assert.ok(!("lastResponse" in JSON.parse(JSON.stringify(client))), "lastResponse is not part of the record");

const doc = seen(
  await counterpart.documents.upload(pcid, {
    type: "government_id",
    front: { data: png, filename: "passport.png", contentType: "image/png" },
  }),
);
assert.equal(doc.type, "government_id");
assert.equal(seen(await counterpart.documents.get(pcid, doc.id)).id, doc.id);

const depositRequest = {
  partner_client_id: pcid,
  asset_id: "AED",
  amount: "1000.50",
  partner_order_ref: `pkg-js-dep-${n}`,
};
const deposit = seen(await counterpart.deposits.create(depositRequest));
assert.equal(deposit.replayed, false);
assert.equal(deposit.order.status, "completed");
assert.equal(toMoney(deposit.order.debit), toMoney("1000.5"));

const quote = seen(
  await counterpart.quotes.create({
    partner_client_id: pcid,
    asset_pair: "BTC-AED",
    side: "buy",
    base_amount: "0.001",
  }),
);
assert.match(quote.token, /^qt_/);
const trade = seen(
  await counterpart.quotes.execute({
    partner_client_id: pcid,
    token: quote.token,
    partner_order_ref: `pkg-js-buy-${n}`,
  }),
);
assert.equal(trade.replayed, false);
assert.equal(trade.order.type, "buy");
assert.equal(trade.order.status, "completed");
assert.equal(trade.order.credit, quote.quote_amount);

// Auto-pagination: one order a page, so listAll walks two pages.
const listed = [];
for await (const order of counterpart.orders.listAll({ partner_client_id: pcid, page_size: 1 })) {
  listed.push(seen(order));
}
assert.deepEqual(
  listed.map((o) => [o.type, o.partner_order_ref]),
  [
    ["buy", `pkg-js-buy-${n}`],
    ["deposit", `pkg-js-dep-${n}`],
  ],
);
assert.notEqual(listed[0].lastResponse.requestId, listed[1].lastResponse.requestId, "one request a page");

// The same deposit again (a retry after a lost response): the order the reference names, once.
const replayed = seen(await counterpart.deposits.create(depositRequest));
assert.equal(replayed.replayed, true);
assert.equal(replayed.order.id, deposit.order.id);
// The same reference on another request: a ConflictError naming the order that holds it.
await assert.rejects(counterpart.deposits.create({ ...depositRequest, amount: "5" }), (err) => {
  assert.ok(err instanceof ConflictError);
  assert.equal(err.existingOrder.id, deposit.order.id);
  assert.equal(typeof err.requestId, "string");
  return true;
});
const balance = seen(await counterpart.balances.get(pcid, "AED"));
assert.ok(toMoney(balance.available_balance) < toMoney("1000.5"), "the trade was paid once");

await assert.rejects(counterpart.orders.getByRef(`pkg-js-none-${n}`), (err) => {
  assert.ok(err instanceof NotFoundError);
  assert.equal(err.status, 404);
  assert.equal(typeof err.requestId, "string");
  return true;
});

process.stdout.write(
  `${JSON.stringify({ ok: true, node: process.version, orders: listed.length, request_ids: requestIds.size })}\n`,
);
