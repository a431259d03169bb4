// Every endpoint of the contract, once: the method, the target (path, trailing slash, query) and body
// the SDK sends, signed or not, and the part of the response it returns.

import assert from "node:assert/strict";
import { describe, test } from "node:test";
import type { ClientCreateRequest, ClientUpdateRequest, Counterpart } from "./index.ts";
import { bodyText, fakeClient, ok, order } from "./test-fakes.ts";

const update: ClientUpdateRequest = {
  name: "Client One",
  email: "one@example.com",
  phone: "+971500000001",
  residency_id: "ae",
  citizenship_id: "ae",
  government_id_number: "784-1990-0000001-1",
  government_id_doe: "2030-01-31",
  address: { street: "1 Sheikh Zayed Rd", city: "Dubai", postal_code: "00000", unit: "12" },
  employment: {
    status: "self_employed",
    company: "Acme",
    job_industry: "banking_financial_services",
    job_title: "Owner",
  },
  trading_volume: "1000_10000",
  account_purpose: ["long_term_investment"],
};
const create: ClientCreateRequest = {
  ...update,
  partner_client_id: "client-1",
  account_type: "personal",
  birth_date: "1990-05-17",
  place_of_birth_id: "ae",
};

interface Case {
  name: string;
  call: (c: Counterpart) => Promise<unknown>;
  method: string;
  target: string;
  signed: boolean;
  body?: unknown;
  reply: unknown;
  status?: number;
  returns: unknown;
}

const one = { id: 7 };
const page = { items: [one], total: 1, page: 1, page_size: 10 };

const cases: Case[] = [
  {
    name: "assets.list",
    call: (c) => c.assets.list(),
    method: "GET",
    target: "/v1/public/assets",
    signed: false,
    reply: { items: [one] },
    returns: [one],
  },
  {
    name: "assets.get",
    call: (c) => c.assets.get("BTC"),
    method: "GET",
    target: "/v1/public/assets/BTC",
    signed: false,
    reply: { result: one },
    returns: one,
  },
  {
    name: "countries.list",
    call: (c) => c.countries.list(),
    method: "GET",
    target: "/v1/public/countries",
    signed: false,
    reply: { items: [one] },
    returns: [one],
  },
  {
    name: "countries.get",
    call: (c) => c.countries.get("ae"),
    method: "GET",
    target: "/v1/public/countries/ae",
    signed: false,
    reply: { result: one },
    returns: one,
  },
  {
    name: "assetPairs.list",
    call: (c) => c.assetPairs.list(),
    method: "GET",
    target: "/v1/partner/asset-pairs",
    signed: true,
    reply: { items: [one] },
    returns: [one],
  },
  {
    name: "assetPairs.get",
    call: (c) => c.assetPairs.get("BTC-AED"),
    method: "GET",
    target: "/v1/partner/asset-pairs/BTC-AED",
    signed: true,
    reply: { result: one },
    returns: one,
  },
  {
    name: "balances.list",
    call: (c) => c.balances.list("client-1"),
    method: "GET",
    target: "/v1/partner/balances?partner_client_id=client-1",
    signed: true,
    reply: { items: [one] },
    returns: [one],
  },
  {
    name: "balances.get",
    call: (c) => c.balances.get("client-1", "AED"),
    method: "GET",
    target: "/v1/partner/balances/AED?partner_client_id=client-1",
    signed: true,
    reply: { result: one },
    returns: one,
  },
  {
    name: "quotes.create",
    call: (c) =>
      c.quotes.create({
        partner_client_id: "client-1",
        asset_pair: "BTC-AED",
        side: "sell",
        base_amount: "0.5",
      }),
    method: "POST",
    target: "/v1/partner/quotes",
    signed: true,
    body: { partner_client_id: "client-1", asset_pair: "BTC-AED", side: "sell", base_amount: "0.5" },
    reply: { result: one },
    returns: one,
  },
  {
    name: "quotes.execute",
    call: (c) =>
      c.quotes.execute({ partner_client_id: "client-1", token: "qt_abc", partner_order_ref: "t-1" }),
    method: "POST",
    target: "/v1/partner/quotes/execute",
    signed: true,
    body: { partner_client_id: "client-1", token: "qt_abc", partner_order_ref: "t-1" },
    reply: { result: order({ type: "sell" }) },
    returns: { order: order({ type: "sell" }), replayed: false },
  },
  {
    name: "deposits.create",
    call: (c) =>
      c.deposits.create({
        partner_client_id: "client-1",
        asset_id: "AED",
        amount: "10",
        partner_order_ref: "d-1",
      }),
    method: "POST",
    target: "/v1/partner/deposits",
    signed: true,
    body: { partner_client_id: "client-1", asset_id: "AED", amount: "10", partner_order_ref: "d-1" },
    reply: { result: order() },
    returns: { order: order(), replayed: false },
  },
  {
    name: "withdrawals.create",
    call: (c) =>
      c.withdrawals.create({
        partner_client_id: "client-1",
        asset_id: "AED",
        amount: "10",
        partner_order_ref: "w-1",
      }),
    method: "POST",
    target: "/v1/partner/withdrawals",
    signed: true,
    body: { partner_client_id: "client-1", asset_id: "AED", amount: "10", partner_order_ref: "w-1" },
    reply: { result: order({ type: "withdrawal" }) },
    returns: { order: order({ type: "withdrawal" }), replayed: false },
  },
  {
    name: "orders.get",
    call: (c) => c.orders.get(42),
    method: "GET",
    target: "/v1/partner/orders/42",
    signed: true,
    reply: { result: order() },
    returns: order(),
  },
  {
    name: "orders.getByRef",
    call: (c) => c.orders.getByRef("d-1"),
    method: "GET",
    target: "/v1/partner/orders/ref/d-1",
    signed: true,
    reply: { result: order() },
    returns: order(),
  },
  {
    name: "orders.list",
    call: (c) =>
      c.orders.list({
        source: ["bank", "market"],
        to_datetime: "2026-11-21T10:00:00Z",
        page: 2,
        page_size: 5,
      }),
    method: "GET",
    target:
      "/v1/partner/orders?source=bank&source=market&to_datetime=2026-11-21T10%3A00%3A00Z&page=2&page_size=5",
    signed: true,
    reply: page,
    returns: page,
  },
  {
    name: "orders.list (no filters)",
    call: (c) => c.orders.list(),
    method: "GET",
    target: "/v1/partner/orders",
    signed: true,
    reply: page,
    returns: page,
  },
  {
    name: "clients.create",
    call: (c) => c.clients.create(create),
    method: "POST",
    target: "/v1/partner/clients",
    signed: true,
    body: create,
    reply: { result: one },
    status: 201,
    returns: one,
  },
  {
    name: "clients.get",
    call: (c) => c.clients.get("client-1"),
    method: "GET",
    target: "/v1/partner/clients/client-1/",
    signed: true,
    reply: { result: one },
    returns: one,
  },
  {
    name: "clients.update",
    call: (c) => c.clients.update("client-1", update),
    method: "PUT",
    target: "/v1/partner/clients/client-1/",
    signed: true,
    body: update,
    reply: { result: one },
    returns: one,
  },
  {
    name: "clients.setActive",
    call: (c) => c.clients.setActive("client-1", false),
    method: "PUT",
    target: "/v1/partner/clients/client-1/activation",
    signed: true,
    body: { active: false },
    reply: undefined,
    status: 204,
    returns: {
      requestId: null,
      status: 204,
      method: "PUT",
      target: "/v1/partner/clients/client-1/activation",
    },
  },
  {
    name: "clients.list",
    call: (c) =>
      c.clients.list({ status: ["verified", "rejected"], from_datetime: "2026-01-01", page_size: 50 }),
    method: "GET",
    target: "/v1/partner/clients?status=verified&status=rejected&from_datetime=2026-01-01&page_size=50",
    signed: true,
    reply: page,
    returns: page,
  },
  {
    name: "documents.get",
    call: (c) => c.documents.get("client-1", 3),
    method: "GET",
    target: "/v1/partner/clients/client-1/documents/3",
    signed: true,
    reply: { result: one },
    returns: one,
  },
  {
    name: "documents.list",
    call: (c) => c.documents.list("client-1", { type: ["proof_of_address", "bank_statement"] }),
    method: "GET",
    target: "/v1/partner/clients/client-1/documents?type=proof_of_address&type=bank_statement",
    signed: true,
    reply: page,
    returns: page,
  },
];

describe("every endpoint", () => {
  for (const c of cases) {
    test(c.name, async () => {
      const fake = fakeClient(() =>
        c.status === 204 ? new Response(null, { status: 204 }) : ok(c.reply, c.status ?? 200),
      );
      assert.deepEqual(await c.call(fake.client), c.returns);
      assert.equal(fake.requests.length, 1);
      const [r] = fake.requests;
      assert.ok(r);
      assert.equal(r.method, c.method);
      assert.equal(r.target, c.target);
      assert.equal(r.headers["X-Signature"] !== undefined, c.signed);
      if (c.body === undefined) assert.equal(r.body, undefined);
      else assert.deepEqual(JSON.parse(bodyText(r.body)), c.body);
    });
  }

  test("documents.upload is covered in documents.test.ts; every spec endpoint is listed here", () => {
    const endpoints = new Set(cases.map((c) => c.name.replace(/ \(.*\)$/, "")));
    assert.equal(
      endpoints.size + 1,
      23,
      "4 public + 4 pairs/balances + 2 trading + 2 funding + 3 orders + 5 clients + 3 documents",
    );
  });
});
