// The server accepts a request signed by the openssl command line, with the canonical string built
// here by hand from docs/reference.md §5.2, not by the project's signing code.

import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, before, test } from "node:test";
import { startTestContext, type TestContext, testNote } from "../testing/harness.ts";

let ctx: TestContext;
let dir: string;
before(async () => {
  ctx = await startTestContext();
  dir = fs.mkdtempSync(path.join(os.tmpdir(), "cp-openssl-"));
});
after(async () => {
  await ctx.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

function openssl(args: string[], input?: string): Buffer {
  return execFileSync("openssl", args, { input, cwd: dir });
}

test("a request signed with `openssl pkeyutl -sign -rawin` is accepted", async () => {
  openssl(["genpkey", "-algorithm", "ed25519", "-out", "key.pem"]);
  openssl(["pkey", "-in", "key.pem", "-pubout", "-out", "pub.pem"]);
  const created = await ctx.services.partners.create(
    {
      name: "openssl partner",
      publicKeyPem: fs.readFileSync(path.join(dir, "pub.pem"), "utf8"),
      allowIps: ["127.0.0.1/32"],
    },
    testNote,
  );
  assert.ok(created.ok);

  const body = '{"note": "bytes as sent"}';
  fs.writeFileSync(path.join(dir, "body.json"), body);
  const bodyHash = openssl(["dgst", "-sha256", "-r", "body.json"]).toString().split(" ")[0]!;
  assert.match(bodyHash, /^[0-9a-f]{64}$/);
  const timestamp = String(ctx.clock.nowMs());
  // Query pieces sorted by name in the signed path; sent in another order.
  const canonical = `${timestamp}POST/v1/partner/anything?a=1&b=2${bodyHash}`;
  fs.writeFileSync(path.join(dir, "canonical.txt"), canonical);
  openssl(["pkeyutl", "-sign", "-inkey", "key.pem", "-rawin", "-in", "canonical.txt", "-out", "sig.bin"]);
  const signature = fs.readFileSync(path.join(dir, "sig.bin")).toString("base64");

  const res = await ctx.app.inject({
    method: "POST",
    url: "/v1/partner/anything?b=2&a=1",
    headers: {
      "X-Partner-ID": created.partner.id,
      "X-Timestamp": timestamp,
      "X-Signature": signature,
      "content-type": "application/json",
    },
    payload: body,
  });
  // Authenticated, then routed: the path does not exist.
  assert.equal(res.statusCode, 404);

  const getCanonical = `${timestamp}GET/v1/partner/asset-pairs${openssl(["dgst", "-sha256", "-r", "/dev/null"]).toString().split(" ")[0]}`;
  fs.writeFileSync(path.join(dir, "get.txt"), getCanonical);
  openssl(["pkeyutl", "-sign", "-inkey", "key.pem", "-rawin", "-in", "get.txt", "-out", "get.bin"]);
  const ok = await ctx.app.inject({
    method: "GET",
    url: "/v1/partner/asset-pairs",
    headers: {
      "X-Partner-ID": created.partner.id,
      "X-Timestamp": timestamp,
      "X-Signature": fs.readFileSync(path.join(dir, "get.bin")).toString("base64"),
    },
  });
  assert.equal(ok.statusCode, 200);
  assert.ok(ok.json().items.length > 0);
});
