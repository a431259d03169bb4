// The request sender: what is signed is what is sent, every attempt is signed afresh, and retries
// happen only where docs/reference.md §7.4 allows them, bounded, with backoff.

import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { describe, test } from "node:test";
import {
  canonicalPath,
  canonicalString,
  decodeSignature,
  parsePublicKey,
  TIMESTAMP_WINDOW_MS,
  verifySignature,
} from "@counterpart/protocol";
import {
  AuthenticationError,
  ConflictError,
  Counterpart,
  NetworkError,
  NotFoundError,
  RateLimitError,
  ServerError,
  TimeoutError,
  ValidationError,
} from "./index.ts";
import {
  baseUrl,
  bodyText,
  errorReply,
  fakeClient,
  keys,
  networkError,
  ok,
  order,
  partnerId,
  type Recorded,
  startMs,
} from "./test-fakes.ts";

/** The User-Agent names the version partners install: the package manifest's. */
const manifestVersion = (
  JSON.parse(fs.readFileSync(path.join(import.meta.dirname, "..", "package.json"), "utf8")) as {
    version: string;
  }
).version;

const publicKey = (() => {
  const parsed = parsePublicKey(keys.publicKeyPem);
  assert.ok(parsed.ok);
  return parsed.key;
})();

/** The service's check (docs/reference.md §5.3) on a recorded request, with the protocol's own functions. */
function verifies(r: Recorded): boolean {
  const signature = decodeSignature(r.headers["X-Signature"] ?? "");
  const path = canonicalPath(r.target);
  if (signature === null || path === null) return false;
  const canonical = canonicalString({
    timestamp: r.headers["X-Timestamp"] ?? "",
    method: r.method,
    path,
    body: r.body,
  });
  return verifySignature(publicKey, canonical, signature);
}

const deposit = {
  partner_client_id: "client-1",
  asset_id: "AED",
  amount: "100.5",
  partner_order_ref: "dep-1",
};

describe("signing", () => {
  test("a JSON body is serialised once: the string sent is the string signed", async () => {
    const fake = fakeClient(() => ok({ result: order() }));
    await fake.client.deposits.create(deposit);
    const [r] = fake.requests;
    assert.ok(r);
    assert.equal(r.method, "POST");
    assert.equal(r.target, "/v1/partner/deposits");
    assert.equal(typeof r.body, "string");
    assert.equal(r.body, JSON.stringify(deposit));
    assert.equal(r.headers["content-type"], "application/json");
    assert.equal(r.headers["X-Partner-ID"], partnerId);
    assert.equal(r.headers["X-Timestamp"], String(startMs));
    assert.ok(verifies(r), "the signature verifies against the exact target and body sent");
    // The same signature over another body, or another target, does not verify.
    assert.equal(verifies({ ...r, body: JSON.stringify({ ...deposit, amount: "100.50" }) }), false);
    assert.equal(verifies({ ...r, target: "/v1/partner/withdrawals" }), false);
  });

  test("a GET with a query is signed over the target as sent (repeated names kept in order)", async () => {
    const fake = fakeClient(() => ok({ items: [], total: 0, page: 1, page_size: 10 }));
    await fake.client.orders.list({
      status: ["completed", "failed"],
      partner_client_id: "client one/2",
      from_datetime: new Date(Date.UTC(2026, 10, 1)),
      page: 1,
    });
    const [r] = fake.requests;
    assert.ok(r);
    assert.equal(
      r.target,
      "/v1/partner/orders?partner_client_id=client%20one%2F2&status=completed&status=failed" +
        "&from_datetime=2026-11-01T00%3A00%3A00.000Z&page=1",
    );
    assert.equal(r.body, undefined);
    assert.ok(verifies(r));
  });

  test("client paths keep their trailing slash, signed and sent", async () => {
    const fake = fakeClient(() => ok({ result: {} }));
    await fake.client.clients.get("client-1");
    assert.equal(fake.requests[0]?.target, "/v1/partner/clients/client-1/");
    assert.ok(verifies(fake.requests[0]!));
  });

  test("a baseUrl with a path prefix is part of the signed path", async () => {
    const fake = fakeClient(() => ok({ items: [] }), { baseUrl: `${baseUrl}/counterpart/` });
    await fake.client.assetPairs.list();
    assert.equal(fake.requests[0]?.target, "/counterpart/v1/partner/asset-pairs");
    assert.ok(verifies(fake.requests[0]!));
  });

  test("public endpoints are sent without signature headers", async () => {
    const fake = fakeClient(() => ok({ items: [] }));
    await fake.client.assets.list();
    await fake.client.countries.list();
    for (const r of fake.requests) {
      assert.equal(r.headers["X-Signature"], undefined);
      assert.equal(r.headers["X-Partner-ID"], undefined);
    }
  });

  test("every attempt carries a fresh timestamp and its own valid signature", async () => {
    const fake = fakeClient((_r, n) =>
      n < 2 ? errorReply(500, 500, "Internal Server Error") : ok({ result: order() }),
    );
    await fake.client.deposits.create(deposit);
    const stamps = fake.requests.map((r) => r.headers["X-Timestamp"]);
    assert.deepEqual(stamps, [String(startMs), String(startMs + 375), String(startMs + 375 + 750)]);
    assert.equal(new Set(fake.requests.map((r) => r.headers["X-Signature"])).size, 3);
    assert.ok(fake.requests.every(verifies));
  });

  test("identical state-changing requests in one millisecond get different timestamps (no replay)", async () => {
    const fake = fakeClient(() => ok({ result: { token: "t" } }));
    const quote = {
      partner_client_id: "client-1",
      asset_pair: "BTC-AED",
      side: "buy",
      base_amount: "0.1",
    } as const;
    await Promise.all([fake.client.quotes.create(quote), fake.client.quotes.create(quote)]);
    const [a, b] = fake.requests;
    assert.notEqual(a?.headers["X-Timestamp"], b?.headers["X-Timestamp"]);
    assert.notEqual(a?.headers["X-Signature"], b?.headers["X-Signature"]);
    // Reads are not replays, and distinct bodies never collide: neither waits.
    const reads = fakeClient(() => ok({ items: [] }));
    await Promise.all([reads.client.assetPairs.list(), reads.client.assetPairs.list()]);
    assert.deepEqual(reads.sleeps, []);
  });

  test("the timestamp is the clock's, so a skewed clock is the caller's to fix (window is 60 s)", async () => {
    assert.equal(TIMESTAMP_WINDOW_MS, 60_000);
    const fake = fakeClient(() => ok({ items: [] }), { clock: { nowMs: () => 1_700_000_000_123 } });
    await fake.client.assetPairs.list();
    assert.equal(fake.requests[0]?.headers["X-Timestamp"], "1700000000123");
  });
});

describe("retries", () => {
  test("500 then success: retried with exponential backoff and jitter", async () => {
    const fake = fakeClient((_r, n) =>
      n < 2 ? errorReply(500, 500, "Internal Server Error") : ok({ items: [] }),
    );
    const pairs = await fake.client.assetPairs.list();
    assert.deepEqual(pairs, []);
    assert.equal(fake.requests.length, 3);
    // random() = 0.5: half of the ceiling fixed plus a quarter; ceilings 500, 1000 ms.
    assert.deepEqual(fake.sleeps, [375, 750]);
  });

  test("the jitter spreads the delay over the upper half of each ceiling", async () => {
    for (const [random, expected] of [
      [0, [250, 500]],
      [0.999, [500, 1000]],
    ] as const) {
      const fake = fakeClient(
        (_r, n) => (n < 2 ? errorReply(503, 503, "Service Unavailable") : ok({ items: [] })),
        {
          random: () => random,
        },
      );
      await fake.client.assetPairs.list();
      assert.deepEqual(fake.sleeps, expected);
    }
  });

  test("503 honours Retry-After (seconds), capped by retryMaxDelayMs", async () => {
    const fake = fakeClient(
      (_r, n) =>
        n === 0
          ? new Response(JSON.stringify({ code: 503, msg: "Service Unavailable", msg_detail: null }), {
              status: 503,
              headers: { "retry-after": "3" },
            })
          : n === 1
            ? new Response("{}", { status: 503, headers: { "retry-after": "120" } })
            : ok({ items: [] }),
      { retryMaxDelayMs: 5_000 },
    );
    await fake.client.assetPairs.list();
    assert.deepEqual(fake.sleeps, [3_000, 5_000]);
  });

  const tooMany = (retryAfter: string | null) =>
    new Response(JSON.stringify({ code: 429, msg: "Too Many Requests", msg_detail: null }), {
      status: 429,
      headers: retryAfter === null ? {} : { "retry-after": retryAfter },
    });

  test("429: waits out Retry-After, then sends the request again, signed afresh (a write too)", async () => {
    const fake = fakeClient((_r, n) => (n === 0 ? tooMany("7") : ok({ result: order() })), {
      retryMaxDelayMs: 10_000,
    });
    await fake.client.deposits.create(deposit);
    assert.equal(fake.requests.length, 2);
    assert.deepEqual(fake.sleeps, [7_000]);
    assert.notEqual(fake.requests[0]!.headers["X-Signature"], fake.requests[1]!.headers["X-Signature"]);
    assert.ok(fake.requests.every(verifies));
  });

  test("429 whose Retry-After is beyond the retry budget: a RateLimitError at once, with the wait", async () => {
    const fake = fakeClient(() => tooMany("60"), { retryMaxDelayMs: 10_000 });
    await assert.rejects(fake.client.assetPairs.list(), (err: unknown) => {
      assert.ok(err instanceof RateLimitError);
      assert.equal(err.status, 429);
      assert.equal(err.code, 429);
      assert.equal(err.errorName, "too_many_requests");
      assert.equal(err.retryAfterSeconds, 60);
      assert.match(err.message, /Too Many Requests \(HTTP 429\): retry after 60 s\. To fix: .*rate limit/);
      return true;
    });
    assert.equal(fake.requests.length, 1, "not sent again");
    assert.deepEqual(fake.sleeps, []);
  });

  test("429 every time: gives up after maxRetries; without Retry-After it backs off as for 503", async () => {
    const fake = fakeClient(() => tooMany(null));
    await assert.rejects(fake.client.assetPairs.list(), (err: unknown) => {
      assert.ok(err instanceof RateLimitError);
      assert.equal(err.retryAfterSeconds, null);
      assert.match(err.message, /after 3 attempts/);
      return true;
    });
    assert.deepEqual(fake.sleeps, [375, 750]);
  });

  test("408 (not received in time; nothing applied) is sent again, a write too", async () => {
    const fake = fakeClient((_r, n) =>
      n === 0 ? errorReply(408, 408, "Request Timeout") : ok({ result: order() }),
    );
    await fake.client.deposits.create(deposit);
    assert.equal(fake.requests.length, 2);
    assert.deepEqual(fake.sleeps, [375]);
  });

  test("500 every time: gives up after maxRetries with a ServerError that says so", async () => {
    const fake = fakeClient(() => errorReply(500, 500, "Internal Server Error"));
    await assert.rejects(fake.client.deposits.create(deposit), (err: unknown) => {
      assert.ok(err instanceof ServerError);
      assert.equal(err.status, 500);
      assert.equal(err.code, 500);
      assert.match(
        err.message,
        /^POST \/v1\/partner\/deposits: Internal Server Error \(HTTP 500, after 3 attempts\)\. To fix: /,
      );
      return true;
    });
    assert.equal(fake.requests.length, 3, "default maxRetries is 2");
    assert.deepEqual(fake.sleeps, [375, 750]);
  });

  test("maxRetries is configurable per client and per call; 0 sends once", async () => {
    const five = fakeClient(() => errorReply(500, 500, "Internal Server Error"), { maxRetries: 5 });
    await assert.rejects(five.client.assetPairs.list(), ServerError);
    assert.equal(five.requests.length, 6);
    assert.deepEqual(five.sleeps, [375, 750, 1500, 3000, 6000]);
    const once = fakeClient(() => errorReply(500, 500, "Internal Server Error"));
    await assert.rejects(once.client.assetPairs.list({ maxRetries: 0 }), ServerError);
    assert.equal(once.requests.length, 1);
  });

  test("the backoff never exceeds retryMaxDelayMs", async () => {
    const fake = fakeClient(() => errorReply(500, 500, "Internal Server Error"), {
      maxRetries: 10,
      retryBaseDelayMs: 1_000,
      retryMaxDelayMs: 4_000,
      random: () => 0.999,
    });
    await assert.rejects(fake.client.assetPairs.list(), ServerError);
    assert.ok(fake.sleeps.every((ms) => ms <= 4_000));
    assert.equal(fake.sleeps.at(-1), 3_998, "the ceiling's half plus 0.999 of its other half");
  });

  test("a network error before any response is retried, then succeeds", async () => {
    const fake = fakeClient((_r, n) => (n === 0 ? networkError("ECONNRESET") : ok({ result: order() })));
    const { order: created, replayed } = await fake.client.deposits.create(deposit);
    assert.equal(created.id, 42);
    assert.equal(replayed, false);
    assert.equal(fake.requests.length, 2);
  });

  test("network errors every time: NetworkError after the bounded attempts", async () => {
    const fake = fakeClient(() => networkError("ECONNREFUSED"));
    await assert.rejects(fake.client.assetPairs.list(), (err: unknown) => {
      assert.ok(err instanceof NetworkError);
      assert.equal(err.status, null);
      assert.equal(err.maybeSent, false);
      assert.match(err.message, /ECONNREFUSED.*after 3 attempts.*check baseUrl/);
      return true;
    });
    assert.equal(fake.requests.length, 3);
  });

  test("a request that must not be sent twice is retried only when the connection was never made", async () => {
    const client = {
      partner_client_id: "c",
    } as unknown as Parameters<Counterpart["clients"]["create"]>[0];
    const refused = fakeClient((_r, n) => (n === 0 ? networkError("ECONNREFUSED") : ok({ result: {} }, 201)));
    await refused.client.clients.create(client);
    assert.equal(refused.requests.length, 2, "refused: nothing reached the service, so it is sent again");

    const reset = fakeClient(() => networkError("ECONNRESET"));
    await assert.rejects(reset.client.clients.create(client), (err: unknown) => {
      assert.ok(err instanceof NetworkError);
      assert.equal(err.maybeSent, true);
      assert.match(err.message, /may have applied it, so it was not sent again/);
      return true;
    });
    assert.equal(reset.requests.length, 1, "reset mid-request: the first copy may have created the client");

    const execute = fakeClient(() => networkError("ECONNRESET"));
    await assert.rejects(
      execute.client.quotes.execute({ partner_client_id: "c", token: "qt_x" }),
      NetworkError,
    );
    assert.equal(execute.requests.length, 1, "an execution without a reference cannot be recovered");
  });

  for (const [status, code, msg, errorClass] of [
    [400, 2008, "Invalid client ID", Error],
    [401, 401, "Unauthorized", AuthenticationError],
    [404, 404, "Not Found", NotFoundError],
    [409, 2020, "An order with this partner_order_ref already exists", ConflictError],
    [422, 422, "Validation Error", ValidationError],
  ] as const) {
    test(`${status} (${code}) is never retried`, async () => {
      const fake = fakeClient(() => errorReply(status, code, msg, status === 422 ? [] : null));
      await assert.rejects(fake.client.quotes.execute({ partner_client_id: "c", token: "qt_x" }), errorClass);
      assert.equal(fake.requests.length, 1);
      assert.deepEqual(fake.sleeps, []);
    });
  }
});

describe("timeouts", () => {
  test("no response within timeoutMs: TimeoutError; reads are tried again, then give up", async () => {
    const fake = fakeClient(() => "hang", { timeoutMs: 20, maxRetries: 1 });
    await assert.rejects(fake.client.assetPairs.list(), (err: unknown) => {
      assert.ok(err instanceof TimeoutError);
      assert.equal(err.timeoutMs, 20);
      assert.equal(err.status, null);
      assert.match(err.message, /no response within 20 ms \(after 2 attempts\)/);
      return true;
    });
    assert.equal(fake.requests.length, 2);
  });

  test("a timeout on a request that must not be sent twice is reported at once", async () => {
    const fake = fakeClient(() => "hang", { timeoutMs: 20 });
    await assert.rejects(
      fake.client.documents.upload("c", { type: "government_id", front: { data: new Uint8Array([1]) } }),
      TimeoutError,
    );
    assert.equal(fake.requests.length, 1);
  });

  test("a per-call timeout overrides the client's, and a slow answer within it succeeds", async () => {
    const fake = fakeClient(async () => {
      await new Promise((resolve) => setTimeout(resolve, 5));
      return ok({ items: [] });
    });
    assert.deepEqual(await fake.client.assetPairs.list({ timeoutMs: 2_000 }), []);
    const hang = fakeClient(() => "hang");
    await assert.rejects(hang.client.assetPairs.list({ timeoutMs: 10, maxRetries: 0 }), TimeoutError);
  });

  test("the caller's abort signal stops the call with its own reason, not a retry", async () => {
    const fake = fakeClient(() => "hang");
    const controller = new AbortController();
    const reason = new Error("user cancelled");
    setTimeout(() => controller.abort(reason), 5);
    await assert.rejects(fake.client.assetPairs.list({ signal: controller.signal }), (err) => err === reason);
    assert.equal(fake.requests.length, 1);
  });
});

describe("aborting the backoff", () => {
  test("the caller's signal also ends the wait between attempts (real sleep)", async () => {
    const fake = fakeClient(() => errorReply(500, 500, "Internal Server Error"), {
      sleep: undefined,
      retryBaseDelayMs: 60_000,
      retryMaxDelayMs: 60_000,
    });
    const controller = new AbortController();
    const reason = new Error("shutting down");
    setTimeout(() => controller.abort(reason), 10);
    const started = performance.now();
    await assert.rejects(fake.client.assetPairs.list({ signal: controller.signal }), (err) => err === reason);
    assert.ok(performance.now() - started < 5_000, "did not wait out the backoff");
    assert.equal(fake.requests.length, 1);
  });
});

describe("configuration", () => {
  const base = { baseUrl, partnerId, privateKey: keys.privateKeyPem };
  test("bad options are refused at construction with the fix in the message", () => {
    assert.throws(() => new Counterpart({ ...base, privateKey: keys.publicKeyPem }), /is a public key/);
    assert.throws(() => new Counterpart({ ...base, privateKey: "keys/private-key.pem" }), /PEM text/);
    assert.throws(() => new Counterpart({ ...base, baseUrl: "api.example.com" }), /absolute http\(s\) URL/);
    assert.throws(
      () => new Counterpart({ ...base, baseUrl: "https://x.test/?a=1" }),
      /must not carry a query/,
    );
    assert.throws(() => new Counterpart({ ...base, partnerId: "" }), /partnerId/);
    assert.throws(
      () => new Counterpart({ ...base, maxRetries: 11 }),
      /maxRetries must be an integer from 0 to 10/,
    );
    assert.throws(() => new Counterpart({ ...base, timeoutMs: 0 }), /timeoutMs must be an integer from 1/);
    assert.throws(
      () => new Counterpart({ ...base, retryBaseDelayMs: 2_000, retryMaxDelayMs: 1_000 }),
      /retryMaxDelayMs must be an integer from 2000/,
    );
  });

  test("path values that a URL would rewrite are refused before sending", async () => {
    const fake = fakeClient(() => ok({ result: order() }));
    await assert.rejects(
      fake.client.orders.getByRef(".."),
      /partner_order_ref must be a non-empty string other than/,
    );
    await assert.rejects(fake.client.orders.get(0), /orderId must be a positive integer/);
    assert.equal(fake.requests.length, 0);
    // Any other reference travels percent-encoded, and is signed that way.
    await fake.client.orders.getByRef("ref/with ?#'");
    assert.equal(fake.requests[0]?.target, "/v1/partner/orders/ref/ref%2Fwith%20%3F%23%27");
    assert.ok(verifies(fake.requests[0]!));
  });

  test("a success without the documented envelope is reported, not returned", async () => {
    const fake = fakeClient(() => new Response("<html>proxy</html>", { status: 200 }));
    await assert.rejects(fake.client.assetPairs.list(), /not JSON; check that baseUrl/);
    const wrong = fakeClient(() => ok({ data: [] }));
    await assert.rejects(wrong.client.assetPairs.list(), /without the expected \{items: \[…\]\} body/);
  });

  test("requests carry a User-Agent naming the SDK and the caller's appInfo", async () => {
    const fake = fakeClient(() => ok({ items: [] }), { appInfo: "acme-wallet/3.2" });
    await fake.client.assets.list();
    assert.match(
      fake.requests[0]?.headers["user-agent"] ?? "",
      new RegExp(`^counterpart-sdk/${manifestVersion.replaceAll(".", "\\.")} node/\\S+ acme-wallet/3\\.2$`),
    );
    assert.equal(bodyText(fake.requests[0]?.body), "");
  });
});
