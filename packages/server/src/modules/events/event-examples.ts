// One example of every event type, as the feed and the webhooks show it: the OpenAPI document
// carries them on the Event schema (event-views.ts) and docs/reference.md §6.1 shows them.
// event-examples.test.ts pins each one to the schema and to the shape of an event the service
// really writes, so they cannot drift from it.

import type { ClientView } from "../clients/index.ts";
import type { OrderView } from "../orders/index.ts";
import type { EventType, EventView, WebhookTestEventView } from "./event-views.ts";

/** The client of the examples as it was onboarded: `verified` and active (§3.1). */
const client: ClientView = {
  id: 1,
  partner_client_id: "client-1",
  account_type: "personal",
  name: "Layla Haddad",
  birth_date: "1990-05-17",
  status: "verified",
  active: true,
  email: "layla@example.com",
  phone: "+971500000001",
  residency_id: "ae",
  citizenship_id: "ae",
  place_of_birth_id: "ae",
  national_number: null,
  government_id_number: "784-1990-0000001-1",
  government_id_doe: "2030-01-31",
  residency_visa_number: null,
  residency_visa_doe: null,
  address: { street: "1 Sheikh Zayed Rd", city: "Dubai", postal_code: "00000", unit: "Apt 12" },
  employment: {
    status: "employed",
    company: "Acme",
    job_industry: "information_technology_telco",
    job_level: "senior",
    job_title: "Engineer",
  },
  trading_volume: "1000_10000",
  account_purpose: ["long_term_investment"],
  created_at: "2026-11-21T09:30:00.123456Z",
  verified_at: "2026-11-21T09:30:00.123456Z",
};

/** An executed quote: 0.002 BTC bought for 700 AED plus a 3.50 AED fee. */
const buy: OrderView = {
  id: 2,
  order_no: "ORD-20261121-000002",
  partner_order_ref: "buy-1",
  partner_client_id: "client-1",
  type: "buy",
  source: "market",
  status: "completed",
  price: "350000.00000000",
  credit: "700.00000000",
  credit_asset_id: "AED",
  debit: "0.00200000",
  debit_asset_id: "BTC",
  fee: "3.50000000",
  fee_asset_id: "AED",
  vat: "0E-8",
  created_at: "2026-11-21T09:41:12.004211Z",
  transitioned_at: "2026-11-21T09:41:12.004211Z",
  updated_at: "2026-11-21T09:41:12.004211Z",
};

const at = (time: string) => `2026-11-21T${time}Z`;

export const eventExamples: { readonly [T in EventType]: EventView & { type: T } } = {
  "order.completed": {
    id: "evt_AAAAAAAAAvAAAAAAAAAABA",
    type: "order.completed",
    created_at: buy.created_at,
    partner_client_id: "client-1",
    data: buy,
  },
  "order.rejected": {
    id: "evt_AAAAAAAAAvYAAAAAAAAABg",
    type: "order.rejected",
    created_at: at("09:44:03.517880"),
    partner_client_id: "client-1",
    data: {
      ...buy,
      id: 4,
      order_no: "ORD-20261121-000004",
      partner_order_ref: "buy-2",
      status: "rejected",
      created_at: at("09:44:03.517880"),
      transitioned_at: at("09:44:03.517880"),
      updated_at: at("09:44:03.517880"),
    },
  },
  "client.created": {
    id: "evt_AAAAAAAAAugAAAAAAAAAAQ",
    type: "client.created",
    created_at: client.created_at,
    partner_client_id: "client-1",
    data: client,
  },
  "client.updated": {
    id: "evt_AAAAAAAAAuoAAAAAAAAAAg",
    type: "client.updated",
    created_at: at("09:35:27.310092"),
    partner_client_id: "client-1",
    data: { ...client, phone: "+971501234567" },
  },
  "client.status_changed": {
    id: "evt_AAAAAAAAAvkAAAAAAAAACA",
    type: "client.status_changed",
    created_at: at("10:02:11.000318"),
    partner_client_id: "client-1",
    data: { ...client, phone: "+971501234567", status: "under_review", verified_at: null },
  },
  "client.activation_changed": {
    id: "evt_AAAAAAAAAvoAAAAAAAAACQ",
    type: "client.activation_changed",
    created_at: at("10:02:45.781204"),
    partner_client_id: "client-1",
    data: { ...client, phone: "+971501234567", status: "under_review", active: false, verified_at: null },
  },
  "document.created": {
    id: "evt_AAAAAAAAAvgAAAAAAAAABw",
    type: "document.created",
    created_at: at("09:50:00.052344"),
    partner_client_id: "client-1",
    data: {
      id: 1,
      type: "government_id",
      front_file:
        "https://api.example.com/v1/files/tfEmKz5Awx-NjSzyI-OcIRoUzlMQcY4K_Qizpa8Q4jM?expires=1795254300&signature=IL6cilyHV6GRnyqT-5Poc2Vg6So4ZmzACcYEYikJbWE",
      back_file: null,
      created_at: at("09:50:00.052344"),
    },
  },
};

/** What `POST /v1/partner/webhook-endpoints/{id}/test` sends to the endpoint. */
export const webhookTestExample: WebhookTestEventView = {
  id: "evt_test_Jx0dYk1mVZr2b9Qe",
  type: "webhook.test",
  created_at: at("10:15:00.000000"),
  partner_client_id: null,
  data: { endpoint_id: "3f1c9a52-7d0e-4b8a-9e61-0c5d2f4a8b17" },
};
