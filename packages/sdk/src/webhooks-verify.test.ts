// Webhooks.verify is what a partner's receiver runs on bytes anyone on the network can send: it must
// accept exactly the deliveries signed by a published key, and answer anything else with a reason,
// never an exception.

import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { generateKeyPair, signRequest } from "@counterpart/protocol";
import fc from "fast-check";
import { type WebhookHeaders, Webhooks } from "./index.ts";

const nowMs = Date.UTC(2026, 10, 30, 12, 0, 0);
const signer = generateKeyPair();
const other = generateKeyPair();
const keys = [
  { key_id: "wk_other", public_key_pem: other.publicKeyPem },
  { key_id: "wk_1", public_key_pem: signer.publicKeyPem },
];

/** A delivery as the service signs it (the partners' rule turned around, as webhook-signer.ts does). */
function delivery(
  body: Uint8Array | string,
  path: string,
  timestampMs = nowMs,
  eventId = "evt_1",
): Record<string, string> {
  const signed = signRequest({
    partnerId: "service",
    privateKey: signer.privateKeyPem,
    method: "POST",
    target: path,
    body,
    nowMs: timestampMs,
  });
  return {
    "X-Key-ID": "wk_1",
    "X-Timestamp": signed["X-Timestamp"],
    "X-Signature": signed["X-Signature"],
    "X-Event-ID": eventId,
  };
}

/** An event's body as the service sends it: the feed's JSON, whose `id` X-Event-ID repeats. */
function eventBody(id: string, note = ""): string {
  return JSON.stringify({
    id,
    type: "order.status_changed",
    created_at: "2026-11-30T12:00:00.000000Z",
    partner_client_id: "user-1",
    data: { note },
  });
}

const events = fc
  .tuple(fc.string({ unit: "grapheme", maxLength: 200 }), fc.boolean())
  .map(([note, bytes]) =>
    bytes ? new TextEncoder().encode(eventBody("evt_1", note)) : eventBody("evt_1", note),
  );

const bodies = fc.oneof(fc.string({ unit: "binary" }), fc.uint8Array({ maxLength: 512 }));
const paths = fc.oneof(
  fc.constantFrom("/hooks", "/hooks?b=2&a=1", "/h%C3%A9"),
  fc.stringMatching(/^\/[a-z0-9/_-]{0,40}(\?[a-z]=[0-9]{1,3}(&[a-z]=[0-9]{1,3}){0,3})?$/),
);
/** Header values of every kind, including what a framework may hand over (lists, blanks). */
const headerValue = fc.oneof(
  fc.string({ unit: "binary", maxLength: 120 }),
  fc.constantFrom("", " ", "0", "9".repeat(13), "=".repeat(88), "wk_1"),
  fc.array(fc.string({ maxLength: 20 }), { maxLength: 3 }),
  fc.constant(undefined),
);

describe("Webhooks.verify", () => {
  test("a delivery signed by a published key verifies, whatever its event and path", () => {
    fc.assert(
      fc.property(events, paths, (body, path) => {
        const result = Webhooks.verify(body, delivery(body, path), keys, { path, nowMs });
        assert.deepEqual(result, { ok: true, eventId: "evt_1" });
      }),
      { numRuns: 300 },
    );
  });

  test("a changed byte of the body, another path or an old timestamp is refused with a reason", () => {
    fc.assert(
      fc.property(fc.uint8Array({ minLength: 1, maxLength: 256 }), paths, fc.nat(), (body, path, at) => {
        const headers = delivery(body, path);
        const changed = Uint8Array.from(body);
        const i = at % changed.length;
        changed[i] = (changed[i] ?? 0) ^ (1 << (at % 8));
        assert.deepEqual(Webhooks.verify(changed, headers, keys, { path, nowMs }), {
          ok: false,
          reason: "bad signature",
        });
        assert.equal(Webhooks.verify(body, headers, keys, { path: `${path}x`, nowMs }).ok, false);
        assert.deepEqual(Webhooks.verify(body, headers, keys, { path, nowMs: nowMs + 300_001 }), {
          ok: false,
          reason: "timestamp outside the window",
        });
        // Signed by a key the service did not publish under that id.
        const wrongKey = [{ key_id: "wk_1", public_key_pem: other.publicKeyPem }];
        assert.equal(Webhooks.verify(body, headers, wrongKey, { path, nowMs }).ok, false);
      }),
      { numRuns: 200 },
    );
  });

  test("hostile headers, keys and paths get a reason, never an exception", () => {
    const reasons = new Set([
      "missing headers",
      "unknown key id",
      "not an Ed25519 public key",
      "bad timestamp",
      "timestamp outside the window",
      "bad signature",
      "body is not an event",
      "X-Event-ID differs from the body's id",
    ]);
    fc.assert(
      fc.property(
        bodies,
        fc.record({
          "X-Key-ID": headerValue,
          "X-Timestamp": headerValue,
          "X-Signature": headerValue,
          "X-Event-ID": headerValue,
        }),
        fc.string({ unit: "binary", maxLength: 80 }),
        fc.constantFrom(
          keys,
          [{ key_id: "wk_1", public_key_pem: "not a key" }],
          [{ key_id: "wk_1", public_key_pem: "" }],
          [],
        ),
        fc.boolean(),
        (body, hostile, path, published, keepSigned) => {
          // Half the time the signed delivery's headers, each replaced or not by a hostile value.
          const base = keepSigned ? delivery(body, "/hooks") : {};
          const headers: Record<string, unknown> = { ...base };
          for (const [name, value] of Object.entries(hostile)) if (value !== undefined) headers[name] = value;
          const result = Webhooks.verify(body, headers as WebhookHeaders, published, { path, nowMs });
          if (result.ok) {
            // Only the untouched signed delivery may pass, on its own path and keys.
            assert.equal(path, "/hooks");
          } else {
            assert.ok(reasons.has(result.reason), result.reason);
          }
        },
      ),
      { numRuns: 1000 },
    );
  });

  test("the event id is the signed body's: a forged or differing X-Event-ID is refused", () => {
    const body = eventBody("evt_1");
    const headers = delivery(body, "/hooks");
    assert.deepEqual(Webhooks.verify(body, headers, keys, { path: "/hooks", nowMs }), {
      ok: true,
      eventId: "evt_1",
    });
    // A captured delivery replayed under a new X-Event-ID would pass a deduplication keyed on the
    // header: the signature does not cover it.
    assert.deepEqual(
      Webhooks.verify(body, { ...headers, "X-Event-ID": "evt_forged" }, keys, { path: "/hooks", nowMs }),
      { ok: false, reason: "X-Event-ID differs from the body's id" },
    );
    // Signed by the service's key, but the body names another event than the header.
    const other = eventBody("evt_2");
    assert.deepEqual(Webhooks.verify(other, delivery(other, "/hooks"), keys, { path: "/hooks", nowMs }), {
      ok: false,
      reason: "X-Event-ID differs from the body's id",
    });
    // Correctly signed bytes that are not an event (no id, not JSON, not UTF-8) carry no event id.
    for (const notEvent of ["{}", '{"id": 7}', "[]", "not json", new Uint8Array([0x7b, 0xff, 0x7d])]) {
      assert.deepEqual(
        Webhooks.verify(notEvent, delivery(notEvent, "/hooks"), keys, { path: "/hooks", nowMs }),
        { ok: false, reason: "body is not an event" },
      );
    }
  });

  test("headers as a Fetch Headers object, in any case, or as Node's IncomingHttpHeaders", () => {
    const body = eventBody("evt_1");
    const signed = delivery(body, "/hooks?b=2&a=1");
    const options = { path: "/hooks?b=2&a=1", nowMs };
    const accepted = { ok: true, eventId: "evt_1" };
    assert.deepEqual(Webhooks.verify(body, new Headers(signed), keys, options), accepted);
    const lower = Object.fromEntries(Object.entries(signed).map(([k, v]) => [k.toLowerCase(), v]));
    const upper = Object.fromEntries(Object.entries(signed).map(([k, v]) => [k.toUpperCase(), v]));
    assert.deepEqual(Webhooks.verify(body, lower, keys, options), accepted);
    assert.deepEqual(Webhooks.verify(body, upper, keys, options), accepted);
    // A header received twice (Node gives a list; or two spellings of one name) counts as missing.
    const missing = { ok: false, reason: "missing headers" };
    const twice: WebhookHeaders = { ...lower, "x-event-id": ["evt_1", "evt_1"] };
    assert.deepEqual(Webhooks.verify(body, twice, keys, options), missing);
    assert.deepEqual(Webhooks.verify(body, { ...signed, "x-event-id": "evt_1" }, keys, options), missing);
    const repeated = new Headers(signed);
    repeated.append("X-Event-ID", "evt_forged");
    assert.deepEqual(Webhooks.verify(body, repeated, keys, options), {
      ok: false,
      reason: "X-Event-ID differs from the body's id",
    });
  });
});
