// The feed and the webhook endpoints API (docs/reference.md §6.2, §6.3) against a fake: what goes
// on the wire, what comes back (with its lastResponse), and a delete whose response was lost.

import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { NotFoundError } from "./index.ts";
import { errorReply, fakeClient, networkError, ok } from "./test-fakes.ts";
import { jsonResponse } from "./testing.ts";

const endpointId = "3f1c9a52-7d0e-4b8a-9e61-0c5d2f4a8b17";
const endpoint = {
  id: endpointId,
  url: "https://hooks.example/counterpart",
  event_types: [],
  status: "enabled",
  created_at: "2026-11-21T10:15:00.000000Z",
};
const event = (id: string) => ({
  id,
  type: "webhook.test",
  created_at: "2026-11-21T10:15:00.000000Z",
  partner_client_id: null,
  data: {},
});
const withId = (requestId: string, body: unknown) => jsonResponse(200, body, { "x-request-id": requestId });

describe("events", () => {
  test("page() and every event it holds carry the page's lastResponse", async () => {
    const fake = fakeClient(() =>
      withId("req_1", { items: [event("evt_1"), event("evt_2")], next_cursor: "evt_2", has_more: false }),
    );
    const page = await fake.client.events.page({ after: "evt_0", limit: 2 });
    const expected = {
      requestId: "req_1",
      status: 200,
      method: "GET",
      target: "/v1/partner/events?after=evt_0&limit=2",
    };
    assert.deepEqual(page.lastResponse, expected);
    assert.deepEqual(
      page.items.map((e) => e.lastResponse),
      [expected, expected],
    );
    // Non-enumerable: the page reads as the service sent it.
    assert.deepEqual(JSON.parse(JSON.stringify(page)), {
      items: [event("evt_1"), event("evt_2")],
      next_cursor: "evt_2",
      has_more: false,
    });
  });

  test("list() yields each event with the lastResponse of the page it came in", async () => {
    const fake = fakeClient((_r, n) =>
      n === 0
        ? withId("req_1", { items: [event("evt_1")], next_cursor: "evt_1", has_more: true })
        : withId("req_2", { items: [event("evt_2")], next_cursor: "evt_2", has_more: false }),
    );
    const seen: [string, string | null][] = [];
    for await (const e of fake.client.events.list({ limit: 1 })) seen.push([e.id, e.lastResponse.requestId]);
    assert.deepEqual(seen, [
      ["evt_1", "req_1"],
      ["evt_2", "req_2"],
    ]);
    assert.deepEqual(
      fake.requests.map((r) => r.target),
      ["/v1/partner/events?limit=1", "/v1/partner/events?after=evt_1&limit=1"],
    );
  });
});

describe("webhooks", () => {
  test("get(id) reads one endpoint; an unknown one is a NotFoundError", async () => {
    const fake = fakeClient((_r, n) =>
      n === 0 ? withId("req_1", { result: endpoint }) : errorReply(404, 404, "Not Found"),
    );
    const got = await fake.client.webhooks.get(endpointId);
    assert.deepEqual(got, endpoint);
    assert.equal(got.lastResponse.requestId, "req_1");
    await assert.rejects(fake.client.webhooks.get("nope"), NotFoundError);
    assert.deepEqual(
      fake.requests.map((r) => [r.method, r.target, r.headers["X-Signature"] !== undefined]),
      [
        ["GET", `/v1/partner/webhook-endpoints/${endpointId}`, true],
        ["GET", "/v1/partner/webhook-endpoints/nope", true],
      ],
    );
  });

  test("deliveries(id, {limit, before}) pages back through the log", async () => {
    const delivery = { id: 41, event_id: "evt_1" };
    const fake = fakeClient(() => ok({ items: [delivery] }));
    assert.deepEqual(await fake.client.webhooks.deliveries(endpointId, { limit: 100, before: 42 }), [
      delivery,
    ]);
    assert.deepEqual(await fake.client.webhooks.deliveries(endpointId), [delivery]);
    assert.deepEqual(
      fake.requests.map((r) => r.target),
      [
        `/v1/partner/webhook-endpoints/${endpointId}/deliveries?limit=100&before=42`,
        `/v1/partner/webhook-endpoints/${endpointId}/deliveries`,
      ],
    );
    // Out of the route's bounds: refused before anything is sent.
    for (const params of [{ limit: 0 }, { limit: 101 }, { limit: 1.5 }, { before: 0 }, { before: -3 }]) {
      await assert.rejects(fake.client.webhooks.deliveries(endpointId, params), RangeError);
    }
    assert.equal(fake.requests.length, 2);
  });

  test("delete: a 404 to the copy sent again after a lost response means the first deleted it", async () => {
    // The first DELETE reaches the service (which deletes the endpoint), its answer is lost.
    let deleted = false;
    const fake = fakeClient((_r, n) => {
      if (n === 0) {
        deleted = true;
        return networkError("ECONNRESET");
      }
      return deleted ? errorReply(404, 404, "Not Found") : new Response(null, { status: 204 });
    });
    await fake.client.webhooks.delete(endpointId);
    assert.deepEqual(
      fake.requests.map((r) => [r.method, r.target]),
      [
        ["DELETE", `/v1/partner/webhook-endpoints/${endpointId}`],
        ["DELETE", `/v1/partner/webhook-endpoints/${endpointId}`],
      ],
    );
  });

  test("delete: a 404 to the first copy, or after answers that applied nothing, is a NotFoundError", async () => {
    const unknown = fakeClient(() => errorReply(404, 404, "Not Found"));
    await assert.rejects(unknown.client.webhooks.delete(endpointId), NotFoundError);
    assert.equal(unknown.requests.length, 1);
    // A 503 applied nothing: the 404 that follows is the endpoint's own absence.
    const afterUnavailable = fakeClient((_r, n) =>
      n === 0 ? errorReply(503, 503, "Service Unavailable") : errorReply(404, 404, "Not Found"),
    );
    await assert.rejects(afterUnavailable.client.webhooks.delete(endpointId), NotFoundError);
    assert.equal(afterUnavailable.requests.length, 2);
  });
});
