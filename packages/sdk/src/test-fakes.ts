// Test support (not exported): a client wired to a fake HTTP port, a clock that moves only when
// the backoff sleeps, and recorded requests, so tests assert what went on the wire.

import { generateKeyPair } from "@counterpart/protocol";
import type { CounterpartOptions } from "./config.ts";
import { Counterpart } from "./counterpart.ts";
import type { FetchPort, HttpRequest, HttpResponse } from "./ports.ts";
import { jsonResponse } from "./testing.ts";
import type { Order } from "./types.ts";

export const baseUrl = "https://api.counterpart.test";
export const partnerId = "5b0c3f9e-8a4e-4c1e-9a51-2f0d5d6c7b11";
export const keys = generateKeyPair();
export const startMs = 1_795_000_000_000;

export interface Recorded {
  method: string;
  /** Path and query as sent. */
  target: string;
  headers: Record<string, string>;
  body: string | Uint8Array | undefined;
  /** The clock when it was sent. */
  atMs: number;
}

export type Reply = HttpResponse | Error | "hang";

export interface Fake {
  client: Counterpart;
  requests: Recorded[];
  /** Every backoff the sender slept, in ms. */
  sleeps: number[];
  clock: { nowMs(): number; advance(ms: number): void };
}

/** `reply` answers the n-th request (0-based); "hang" waits until the request's signal aborts. */
export function fakeClient(
  reply: (request: Recorded, n: number) => Reply | Promise<Reply>,
  options: Partial<CounterpartOptions> = {},
): Fake {
  let now = startMs;
  const clock = { nowMs: () => now, advance: (ms: number) => (now += ms) };
  const requests: Recorded[] = [];
  const sleeps: number[] = [];
  const fetchPort: FetchPort = async (url: string, init: HttpRequest) => {
    const parsed = new URL(url);
    const recorded: Recorded = {
      method: init.method,
      target: parsed.pathname + parsed.search,
      headers: init.headers,
      body: init.body,
      atMs: now,
    };
    requests.push(recorded);
    const answer = await reply(recorded, requests.length - 1);
    if (answer === "hang") {
      return new Promise<HttpResponse>((_resolve, reject) => {
        init.signal.addEventListener("abort", () => reject(init.signal.reason), { once: true });
      });
    }
    if (answer instanceof Error) throw answer;
    return answer;
  };
  const client = new Counterpart({
    baseUrl,
    partnerId,
    privateKey: keys.privateKeyPem,
    fetch: fetchPort,
    clock,
    sleep: async (ms) => {
      sleeps.push(ms);
      now += ms;
    },
    random: () => 0.5,
    ...options,
  });
  return { client, requests, sleeps, clock };
}

/** What undici throws when no response arrives; `code` says why. */
export function networkError(code: string): TypeError {
  return new TypeError("fetch failed", { cause: Object.assign(new Error(`connect ${code}`), { code }) });
}

export const ok = (body: unknown, status = 200) => jsonResponse(status, body);

export const errorReply = (status: number, code: number, msg: string, detail: unknown = null) =>
  jsonResponse(status, { code, msg, msg_detail: detail });

export function order(overrides: Partial<Order> = {}): Order {
  return {
    id: 42,
    order_no: "ORD-20261121-000042",
    partner_order_ref: "dep-1",
    partner_client_id: "client-1",
    type: "deposit",
    source: "bank",
    status: "completed",
    price: null,
    credit: null,
    credit_asset_id: null,
    debit: "100.50000000",
    debit_asset_id: "AED",
    fee: "0E-8",
    fee_asset_id: "AED",
    vat: "0E-8",
    created_at: "2026-11-21T09:30:00.123456Z",
    transitioned_at: "2026-11-21T09:30:00.123456Z",
    updated_at: "2026-11-21T09:30:00.123456Z",
    ...overrides,
  };
}

export function bodyText(body: string | Uint8Array | undefined): string {
  if (body === undefined) return "";
  return typeof body === "string" ? body : Buffer.from(body).toString("utf8");
}
