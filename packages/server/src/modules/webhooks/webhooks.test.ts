// Webhooks (docs/reference.md, "Webhooks"): endpoints through the signed API, deliveries signed
// with the service's key to a real receiving server, retries with backoff, the delivery log, a
// test event, redelivery, the operator's disable, and which URLs and addresses are refused.

import assert from "node:assert/strict";
import fs from "node:fs";
import http from "node:http";
import type { AddressInfo } from "node:net";
import os from "node:os";
import path from "node:path";
import { after, before, beforeEach, describe, test } from "node:test";
import { canonicalString, parsePublicKey, verifySignature } from "@counterpart/protocol";
import { feedSettled } from "../../testing/events.ts";
import { clientPayload } from "../../testing/fixtures.ts";
import { startTestContext, type TestContext } from "../../testing/harness.ts";
import { addressAllowed, checkWebhookUrl, resolveTarget } from "./url-safety.ts";

interface Hit {
  path: string;
  headers: http.IncomingHttpHeaders;
  body: string;
}

/** A receiver on 127.0.0.1: records every request and answers as `answer` says. */
async function startReceiver() {
  const hits: Hit[] = [];
  let answer: (req: http.IncomingMessage, res: http.ServerResponse) => void = (_q, r) => r.end("ok");
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      hits.push({ path: req.url ?? "", headers: req.headers, body: Buffer.concat(chunks).toString("utf8") });
      answer(req, res);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    hits,
    url: (p: string) => `http://127.0.0.1:${port}${p}`,
    answerWith(f: typeof answer) {
      answer = f;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

describe("webhooks", () => {
  let ctx: TestContext;
  let dataDir: string;
  let receiver: Awaited<ReturnType<typeof startReceiver>>;
  let refN = 0;
  before(async () => {
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "cp-webhooks-"));
    ctx = await startTestContext({ env: { DATA_DIR: dataDir } });
    receiver = await startReceiver();
    const c = await ctx.signed({ method: "POST", url: "/v1/partner/clients", body: clientPayload(1) });
    assert.equal(c.statusCode, 201);
  });
  after(async () => {
    await ctx.services.webhooks.stopWorker();
    await receiver.close();
    await ctx.close();
    fs.rmSync(dataDir, { recursive: true, force: true });
  });
  beforeEach(() => {
    receiver.hits.length = 0;
    receiver.answerWith((_q, r) => r.end("ok"));
  });

  const deposit = () =>
    ctx.signed({
      method: "POST",
      url: "/v1/partner/deposits",
      body: {
        partner_client_id: "client-1",
        asset_id: "AED",
        amount: "10",
        partner_order_ref: `w-${++refN}`,
      },
    });
  async function endpoint(url: string, types: string[] = []) {
    const res = await ctx.signed({
      method: "POST",
      url: "/v1/partner/webhook-endpoints",
      body: { url, event_types: types },
    });
    assert.equal(res.statusCode, 201, res.body);
    return res.json().result as { id: string; status: string };
  }
  /** An operator account of that role, signed in: its calls carry the session and CSRF token. */
  async function operatorSession(role: "viewer" | "compliance" | "admin") {
    const email = `webhooks-${role}@broker.example`;
    const password = "correct horse battery staple";
    const created = await ctx.adminRequest("POST", "/admin/operators", { email, role, password });
    assert.equal(created.statusCode, 201, created.body);
    const res = await ctx.admin.inject({
      method: "POST",
      url: "/admin/session",
      payload: { email, password },
    });
    assert.equal(res.statusCode, 200, res.body);
    const cookie = String(res.headers["set-cookie"]).split(";")[0]!;
    const csrf: string = res.json().result.csrf_token;
    return {
      call: (method: "GET" | "PUT", url: string, body?: object) =>
        ctx.admin.inject({
          method,
          url,
          headers: { cookie, "x-csrf-token": csrf },
          ...(body === undefined ? {} : { payload: body }),
        }),
    };
  }
  /**
   * One round of this process's worker, and the deliveries it started, to their end. It starts once
   * the feed serves every event already committed (testing/events.ts): on PostgreSQL another test
   * file's open transaction can hold a just-written event back, and a round would then find none.
   */
  async function round() {
    await feedSettled(ctx.services.database.db);
    await ctx.services.webhooks.runOnce();
    await ctx.services.webhooks.settle();
  }
  async function deliveries(id: string) {
    const res = await ctx.signed({ method: "GET", url: `/v1/partner/webhook-endpoints/${id}/deliveries` });
    assert.equal(res.statusCode, 200, res.body);
    return res.json().items as {
      event_id: string;
      status: string;
      attempts: number;
      attempt_log: unknown[];
    }[];
  }
  const remove = async (id: string) =>
    assert.equal(
      (await ctx.signed({ method: "DELETE", url: `/v1/partner/webhook-endpoints/${id}` })).statusCode,
      204,
    );

  test("the delivery log's cursor past the largest id is a 422, not a database error", async () => {
    const ep = await endpoint(receiver.url("/cursor"), ["order.completed"]);
    for (const before of ["99999999999999999999", "9007199254740992"]) {
      const res = await ctx.signed({
        method: "GET",
        url: `/v1/partner/webhook-endpoints/${ep.id}/deliveries?before=${before}`,
      });
      assert.equal(res.statusCode, 422, res.body);
      assert.deepEqual(res.json().msg_detail[0].loc, ["query", "before"]);
    }
    const edge = await ctx.signed({
      method: "GET",
      url: `/v1/partner/webhook-endpoints/${ep.id}/deliveries?before=9007199254740991`,
    });
    assert.equal(edge.statusCode, 200, edge.body);
    await remove(ep.id);
  });

  test("an event reaches the endpoint signed with the service's published key, and the log shows it", async () => {
    const keys = await ctx.app.inject({ method: "GET", url: "/v1/public/webhook-keys" });
    assert.equal(keys.statusCode, 200);
    const [key] = keys.json().items as { key_id: string; public_key_pem: string }[];
    assert.ok(key);
    const ep = await endpoint(receiver.url("/hooks/counterpart?x=1"), ["order.completed"]);
    assert.equal(ep.status, "enabled");
    const dep = await deposit();
    assert.equal(dep.statusCode, 200);
    await round();
    assert.equal(receiver.hits.length, 1);
    const hit = receiver.hits[0]!;
    const body = JSON.parse(hit.body);
    const feed = (await ctx.signed({ method: "GET", url: "/v1/partner/events?type=order.completed" })).json();
    assert.deepEqual(body, feed.items.at(-1));
    assert.deepEqual(body.data, dep.json().result);
    assert.equal(hit.headers["x-event-id"], body.id);
    assert.equal(hit.headers["x-key-id"], key.key_id);
    const parsed = parsePublicKey(key.public_key_pem);
    assert.ok(parsed.ok);
    const canonical = canonicalString({
      timestamp: String(hit.headers["x-timestamp"]),
      method: "POST",
      path: hit.path,
      body: hit.body,
    });
    assert.ok(
      parsed.ok &&
        verifySignature(parsed.key, canonical, Buffer.from(String(hit.headers["x-signature"]), "base64")),
    );
    // The same signature does not cover another body.
    assert.ok(
      parsed.ok &&
        !verifySignature(
          parsed.key,
          canonicalString({
            timestamp: String(hit.headers["x-timestamp"]),
            method: "POST",
            path: hit.path,
            body: `${hit.body} `,
          }),
          Buffer.from(String(hit.headers["x-signature"]), "base64"),
        ),
    );
    const log = await deliveries(ep.id);
    assert.equal(log.length, 1);
    assert.equal(log[0]!.status, "delivered");
    assert.equal(log[0]!.attempts, 1);
    assert.equal(log[0]!.event_id, body.id);
    // A second round sends nothing more.
    await round();
    assert.equal(receiver.hits.length, 1);
    await remove(ep.id);
  });

  test("a failure is retried after a backoff, with the same X-Event-ID; 72 h of failures mark the endpoint failing", async () => {
    const ep = await endpoint(receiver.url("/flaky"), ["order.completed"]);
    receiver.answerWith((_q, r) => {
      r.statusCode = 500;
      r.end("no");
    });
    assert.equal((await deposit()).statusCode, 200);
    await round();
    assert.equal(receiver.hits.length, 1);
    let log = await deliveries(ep.id);
    assert.equal(log[0]!.status, "pending");
    // Not due again before the backoff (10 s at most for the first, with jitter).
    await round();
    assert.equal(receiver.hits.length, 1);
    ctx.clock.advance(10_001);
    await round();
    assert.equal(receiver.hits.length, 2);
    assert.equal(receiver.hits[1]!.headers["x-event-id"], receiver.hits[0]!.headers["x-event-id"]);
    assert.equal(receiver.hits[1]!.body, receiver.hits[0]!.body);
    // Past the retry period, the next failure is the last: failed, and the endpoint failing.
    ctx.clock.advance(72 * 3_600_000);
    await round();
    log = await deliveries(ep.id);
    assert.equal(log[0]!.status, "failed");
    assert.equal(log[0]!.attempts, 3);
    assert.equal(log[0]!.attempt_log.length, 3);
    const got = await ctx.signed({ method: "GET", url: `/v1/partner/webhook-endpoints/${ep.id}` });
    assert.equal(got.json().result.status, "failing");
    // Redelivery on demand: due now, and a success clears the failing mark.
    receiver.answerWith((_q, r) => r.end("ok"));
    const again = await ctx.signed({
      method: "POST",
      url: `/v1/partner/webhook-endpoints/${ep.id}/redeliver`,
      body: { event_id: log[0]!.event_id },
    });
    assert.equal(again.statusCode, 202, again.body);
    await round();
    assert.equal(receiver.hits.length, 4);
    assert.equal((await deliveries(ep.id))[0]!.status, "delivered");
    const healed = await ctx.signed({ method: "GET", url: `/v1/partner/webhook-endpoints/${ep.id}` });
    assert.equal(healed.json().result.status, "enabled");
    await remove(ep.id);
  });

  test("a redirect is not followed and counts as a failure", async () => {
    const ep = await endpoint(receiver.url("/moved"), ["order.completed"]);
    receiver.answerWith((req, r) => {
      if (req.url === "/moved") {
        r.statusCode = 302;
        r.setHeader("location", "/elsewhere");
      }
      r.end();
    });
    assert.equal((await deposit()).statusCode, 200);
    await round();
    assert.deepEqual(
      receiver.hits.map((h) => h.path),
      ["/moved"],
    );
    assert.equal((await deliveries(ep.id))[0]!.status, "pending");
    await remove(ep.id);
  });

  test("a slow endpoint does not hold back another's deliveries", async () => {
    let release!: () => void;
    const released = new Promise<void>((r) => (release = r));
    receiver.answerWith((req, r) => {
      if (req.url === "/slow") void released.then(() => r.end("late"));
      else r.end("ok");
    });
    const slow = await endpoint(receiver.url("/slow"), ["order.completed"]);
    const fast = await endpoint(receiver.url("/fast"), ["order.completed"]);
    assert.equal((await deposit()).statusCode, 200);
    await feedSettled(ctx.services.database.db);
    await ctx.services.webhooks.runOnce();
    // The fast one is delivered while the slow one is still waiting for its answer.
    for (let i = 0; i < 1_000 && (await deliveries(fast.id))[0]?.status !== "delivered"; i++)
      await new Promise<void>((r) => setImmediate(r));
    assert.equal((await deliveries(fast.id))[0]!.status, "delivered");
    assert.equal((await deliveries(slow.id))[0]!.status, "pending");
    release();
    await ctx.services.webhooks.settle();
    assert.equal((await deliveries(slow.id))[0]!.status, "delivered");
    await remove(slow.id);
    await remove(fast.id);
  });

  test("a test event, the operator's disable, and another partner's endpoints are out of reach", async () => {
    const ep = await endpoint(receiver.url("/test"));
    const t = await ctx.signed({ method: "POST", url: `/v1/partner/webhook-endpoints/${ep.id}/test` });
    assert.equal(t.statusCode, 202, t.body);
    await round();
    assert.equal(receiver.hits.length, 1);
    assert.equal(JSON.parse(receiver.hits[0]!.body).type, "webhook.test");
    // Disabled by the operator: listed as such, and nothing is delivered to it.
    const list = await ctx.adminRequest("GET", `/admin/webhook-endpoints?partner_id=${ctx.partner.id}`);
    assert.equal(list.statusCode, 200);
    assert.deepEqual(
      list.json().items.map((e: { id: string }) => e.id),
      [ep.id],
    );
    // Whoever disables it must say why: without a reason the disable is a 422 at body.reason, and
    // the endpoint and the audit trail stay as they were.
    const admin = await operatorSession("admin");
    const auditCount = async () =>
      Number(
        (
          await ctx.services.database.db
            .selectFrom("audit_log")
            .select((eb) => eb.fn.countAll().as("n"))
            .where("target_id", "=", ep.id)
            .executeTakeFirstOrThrow()
        ).n,
      );
    const url = `/admin/webhook-endpoints/${ep.id}/enabled`;
    const attempts = [
      () => admin.call("PUT", url, { enabled: false }),
      () => admin.call("PUT", url, { enabled: false, reason: "  " }),
      // The bearer token too (docs/errors.md, "A change without a reason").
      () => ctx.adminRequest("PUT", url, { enabled: false }),
    ];
    for (const attempt of attempts) {
      const refused = await attempt();
      assert.equal(refused.statusCode, 422, refused.body);
      assert.deepEqual(
        refused.json().msg_detail.map((d: { loc: string[] }) => d.loc),
        [["body", "reason"]],
      );
    }
    assert.equal(await auditCount(), 0);
    const still = await ctx.adminRequest("GET", `/admin/webhook-endpoints?partner_id=${ctx.partner.id}`);
    assert.equal(still.json().items[0].status, "enabled");
    const off = await admin.call("PUT", `/admin/webhook-endpoints/${ep.id}/enabled`, {
      enabled: false,
      reason: "endpoint answers 500 to everything",
    });
    assert.equal(off.statusCode, 200, off.body);
    assert.equal(off.json().result.status, "disabled");
    const entry = await ctx.services.database.db
      .selectFrom("audit_log")
      .select(["action", "reason", "actor_kind"])
      .where("target_id", "=", ep.id)
      .executeTakeFirstOrThrow();
    assert.deepEqual(entry, {
      action: "webhook_endpoint.enabled",
      reason: "endpoint answers 500 to everything",
      actor_kind: "operator",
    });
    assert.equal((await deposit()).statusCode, 200);
    await round();
    assert.equal(receiver.hits.length, 1);
    const other = await ctx.addPartner();
    for (const [method, url] of [
      ["GET", `/v1/partner/webhook-endpoints/${ep.id}`],
      ["GET", `/v1/partner/webhook-endpoints/${ep.id}/deliveries`],
      ["POST", `/v1/partner/webhook-endpoints/${ep.id}/test`],
      ["DELETE", `/v1/partner/webhook-endpoints/${ep.id}`],
    ] as const) {
      const res = await ctx.signed({ method, url, partner: other });
      assert.equal(res.statusCode, 404, `${method} ${url}`);
    }
    const theirs = await ctx.signed({ method: "GET", url: "/v1/partner/webhook-endpoints", partner: other });
    assert.deepEqual(theirs.json(), { items: [] });
    await remove(ep.id);
  });

  test("URLs: bad ones are a 422 at body.url, and nothing is registered", async () => {
    for (const url of [
      "not a url",
      "ftp://example.com/x",
      "http://user:pw@example.com/",
      "http://10.0.0.5/x",
      "http://169.254.169.254/latest",
    ]) {
      const res = await ctx.signed({ method: "POST", url: "/v1/partner/webhook-endpoints", body: { url } });
      assert.equal(res.statusCode, 422, url);
      assert.deepEqual(res.json().msg_detail[0].loc, ["body", "url"]);
    }
    const list = await ctx.signed({ method: "GET", url: "/v1/partner/webhook-endpoints" });
    assert.deepEqual(list.json(), { items: [] });
  });
});

describe("webhook URL safety", () => {
  const production = { requireHttps: true, allowLoopback: false, allowPrivate: false };
  const sandbox = { requireHttps: false, allowLoopback: true, allowPrivate: false };
  const operator = { requireHttps: true, allowLoopback: false, allowPrivate: true };

  test("https only outside the sandbox; private, loopback, link-local and special addresses refused", () => {
    assert.equal(checkWebhookUrl("https://hooks.example.com/x", production).ok, true);
    assert.equal(checkWebhookUrl("http://hooks.example.com/x", production).ok, false);
    assert.equal(checkWebhookUrl("http://127.0.0.1:9/x", sandbox).ok, true);
    for (const host of [
      "127.0.0.1",
      "[::1]",
      "localhost",
      "10.1.2.3",
      "192.168.0.1",
      "172.16.0.1",
      "169.254.169.254",
      "[fe80::1]",
      "[fd00::1]",
      "0.0.0.0",
      "[::ffff:127.0.0.1]",
      "224.0.0.1",
    ])
      assert.equal(checkWebhookUrl(`https://${host}/x`, production).ok, false, host);
    assert.equal(checkWebhookUrl("https://10.1.2.3/x", operator).ok, true);
    assert.equal(addressAllowed("8.8.8.8", production), true);
    assert.equal(addressAllowed("::ffff:10.0.0.1", production), false);
    assert.equal(addressAllowed("169.254.1.1", sandbox), false);
  });

  test("a name is judged by every address it resolves to", async () => {
    const url = new URL("https://hooks.example.com/x");
    const to =
      (...addresses: string[]) =>
      async () =>
        addresses.map((address) => ({ address, family: address.includes(":") ? 6 : 4 }));
    assert.deepEqual(await resolveTarget(url, production, to("93.184.216.34")), {
      ok: true,
      address: "93.184.216.34",
      family: 4,
    });
    assert.equal((await resolveTarget(url, production, to("93.184.216.34", "10.0.0.1"))).ok, false);
    assert.equal((await resolveTarget(url, production, to("127.0.0.1"))).ok, false);
    assert.equal((await resolveTarget(url, production, to())).ok, false);
    assert.equal(
      (await resolveTarget(url, production, async () => Promise.reject(new Error("ENOTFOUND")))).ok,
      false,
    );
  });
});
