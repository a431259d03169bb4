// Secrets and client personal data never reach the log, wherever they sit in a logged object.

import assert from "node:assert/strict";
import { Writable } from "node:stream";
import { test } from "node:test";
import Fastify from "fastify";
import { createLogger, isoTimeOf } from "./logger.ts";

test("personal data and secrets are redacted at any of the first levels", () => {
  const lines: string[] = [];
  const sink = new Writable({
    write(chunk, _enc, done) {
      lines.push(chunk.toString());
      done();
    },
  });
  const log = createLogger("info", sink);
  log.info(
    {
      email: "ana@example.com",
      client: { name: "Ana Lima", phone: "+971501234567", government_id_number: "784-1990-1234567-1" },
      req: { headers: { authorization: "Bearer s3cret-token", "x-signature": "c2lnbmF0dXJl" } },
      deep: { a: { address: { street: "1 Main St" }, birth_date: "1990-01-01" } },
      partner_id: "kept-as-is",
    },
    "hello",
  );
  const out = lines.join("");
  for (const secret of [
    "ana@example.com",
    "Ana Lima",
    "+971501234567",
    "784-1990",
    "s3cret-token",
    "c2lnbmF0dXJl",
    "1 Main St",
    "1990-01-01",
  ]) {
    assert.ok(!out.includes(secret), `${secret} leaked: ${out}`);
  }
  assert.match(out, /kept-as-is/);
  assert.match(out, /\[redacted\]/);
});

test("errors are logged through the error serializer, with their sensitive fields redacted", () => {
  const lines: string[] = [];
  const sink = new Writable({
    write(chunk, _enc, done) {
      lines.push(chunk.toString());
      done();
    },
  });
  const log = createLogger("info", sink);
  const err = Object.assign(new TypeError("the lookup failed"), {
    email: "ana@example.com",
    code: "E_LOOKUP",
  });
  const payload = { err, list: [{ phone: "+971501234567" }, "plain"], detail: { token: "tok-123" } };
  log.error(payload, "failed");
  const line = JSON.parse(lines.join(""));
  assert.equal(line.err.type, "TypeError");
  assert.equal(line.err.message, "the lookup failed");
  assert.equal(line.err.code, "E_LOOKUP");
  assert.match(line.err.stack, /TypeError: the lookup failed/);
  assert.equal(line.err.email, "[redacted]");
  assert.deepEqual(line.list, [{ phone: "[redacted]" }, "plain"]);
  assert.deepEqual(line.detail, { token: "[redacted]" });
  // The caller's objects are left as they were.
  assert.equal(err.email, "ana@example.com");
  assert.equal(payload.list[0] && (payload.list[0] as { phone: string }).phone, "+971501234567");
  assert.equal(payload.detail.token, "tok-123");
});

test("a request and a reply are logged by their serializers, never with their headers", async () => {
  const lines: string[] = [];
  const sink = new Writable({
    write(chunk, _enc, done) {
      lines.push(chunk.toString());
      done();
    },
  });
  const app = Fastify({ loggerInstance: createLogger("info", sink) });
  app.get("/v1/x", async () => ({ ok: true }));
  try {
    const res = await app.inject({
      method: "GET",
      url: "/v1/x?partner_client_id=c-1&q=someone%40example.com&token=tok-987&sig%3Dx&page=2",
      headers: { authorization: "Bearer s3cret-token", "x-signature": "c2lnbmF0dXJl" },
    });
    assert.equal(res.statusCode, 200);
  } finally {
    await app.close();
  }
  const out = lines.join("");
  for (const secret of ["s3cret-token", "c2lnbmF0dXJl", "c-1", "someone", "tok-987", "sig%3Dx"]) {
    assert.ok(!out.includes(secret), `${secret} in ${out}`);
  }
  const incoming = lines.map((l) => JSON.parse(l)).find((l) => l.msg === "incoming request");
  assert.equal(incoming?.req?.method, "GET");
  assert.equal(
    incoming?.req?.url,
    "/v1/x?partner_client_id=[redacted]&q=[redacted]&token=[redacted]&[redacted]&page=[redacted]",
  );
  assert.equal(incoming?.req?.remoteAddress, "127.0.0.1");
  const completed = lines.map((l) => JSON.parse(l)).find((l) => l.msg === "request completed");
  assert.equal(completed?.res?.statusCode, 200);
});

test("a line's time is the instant in ISO 8601, UTC, to the millisecond, whatever instant came before", () => {
  const instants = [
    0,
    9,
    10,
    99,
    100,
    999,
    1_000,
    1_001,
    59_999,
    60_000,
    Date.UTC(2026, 11, 31, 23, 59, 59, 999),
  ];
  instants.push(
    Date.UTC(2027, 0, 1),
    Date.UTC(2024, 1, 29, 12, 0, 0, 5),
    Date.UTC(9999, 11, 31, 23, 59, 59, 999),
  );
  // Random instants, and each second's neighbours, out of order: the kept second must never leak.
  let seed = 7;
  for (let i = 0; i < 2_000; i++) {
    seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31;
    const ms = seed * 997;
    instants.push(ms, ms + 1, ms - 1, Math.floor(ms / 1000) * 1000, Math.floor(ms / 1000) * 1000 - 1);
  }
  for (const ms of instants) assert.equal(isoTimeOf(ms), new Date(ms).toISOString(), `at ${ms}`);

  const lines: string[] = [];
  const sink = new Writable({
    write(chunk, _enc, done) {
      lines.push(chunk.toString());
      done();
    },
  });
  const before = Date.now();
  createLogger("info", sink).info("tick");
  const after = Date.now();
  const { time } = JSON.parse(lines.join("")) as { time: string };
  assert.match(time, /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
  const at = Date.parse(time);
  assert.ok(at >= before && at <= after, `${time} not within the call`);
});
