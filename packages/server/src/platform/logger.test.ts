// Secrets and client personal data never reach the log, wherever they sit in a logged object.

import assert from "node:assert/strict";
import { Writable } from "node:stream";
import { test } from "node:test";
import { createLogger } from "./logger.ts";

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
