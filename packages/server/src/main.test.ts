// The service as a process (issue "Foundation", points 1, 2 and 7): the zero-configuration
// sandbox, health and readiness, metrics, logs with request ids and no secrets, the PGlite folder
// lock, graceful shutdown on SIGTERM, and several API processes on PostgreSQL.

import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { after, describe, test } from "node:test";
import { signRequest } from "@counterpart/protocol";
import pg from "pg";
import { onPostgres, testDatabaseUrl } from "./testing/harness.ts";
import { exitOf, type ServiceProcess, spawnServe, startService, tempDataDir } from "./testing/processes.ts";

function signedHeaders(partnerId: string, keyPem: string, method: string, target: string, body = "") {
  return signRequest({ partnerId, privateKey: keyPem, method, target, body, nowMs: Date.now() });
}

describe("the sandbox process", () => {
  const dataDir = tempDataDir();
  let svc: ServiceProcess;
  after(async () => {
    if (svc !== undefined && svc.child.exitCode === null) await svc.stop();
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  test("starts with no configuration beyond ports, prints the demo partner, and serves", async () => {
    svc = await startService({ DATA_DIR: dataDir, LOG_LEVEL: "debug" });
    const out = svc.output();
    const demo = JSON.parse(fs.readFileSync(path.join(dataDir, "demo-partner/partner.json"), "utf8"));
    assert.match(out, new RegExp(`demo partner +${demo.partner_id}`));
    assert.match(out, /private key +.*demo-partner\/private-key\.pem/);
    const token = fs.statSync(path.join(dataDir, "admin-token"));
    assert.equal(token.mode & 0o777, 0o600);

    const key = fs.readFileSync(path.join(dataDir, "demo-partner/private-key.pem"), "utf8");
    const res = await fetch(`${svc.partnerUrl}/v1/partner/asset-pairs`, {
      headers: signedHeaders(demo.partner_id, key, "GET", "/v1/partner/asset-pairs"),
    });
    assert.equal(res.status, 200);
    assert.equal(((await res.json()) as { items: unknown[] }).items.length, 8);
  });

  test("health, readiness and request ids", async () => {
    const health = await fetch(`${svc.partnerUrl}/healthz`);
    assert.equal(health.status, 200);
    assert.deepEqual(await health.json(), { status: "ok" });
    const ready = await fetch(`${svc.partnerUrl}/readyz`, { headers: { "x-request-id": "trace-42" } });
    assert.equal(ready.status, 200);
    assert.equal(ready.headers.get("x-request-id"), "trace-42");
    assert.equal((await fetch(`${svc.adminUrl}/healthz`)).status, 200);
  });

  test("metrics count requests by route and status on the admin listener", async () => {
    await fetch(`${svc.partnerUrl}/v1/public/assets`);
    await fetch(`${svc.partnerUrl}/v1/public/assets/NOPE`);
    const text = await (await fetch(`${svc.adminUrl}/metrics`)).text();
    assert.match(
      text,
      /counterpart_http_request_duration_seconds_count\{method="GET",route="\/v1\/public\/assets",status="200"\} [1-9]/,
    );
    assert.match(
      text,
      /counterpart_http_request_duration_seconds_count\{method="GET",route="\/v1\/public\/assets\/:asset_id",status="404"\} [1-9]/,
    );
    assert.match(text, /counterpart_process_cpu_seconds_total/);
  });

  test("the admin API needs its bearer token", async () => {
    const res = await fetch(`${svc.adminUrl}/admin/partners`);
    assert.equal(res.status, 401);
    const token = fs.readFileSync(path.join(dataDir, "admin-token"), "utf8").trim();
    const ok = await fetch(`${svc.adminUrl}/admin/partners`, {
      headers: { authorization: `Bearer ${token}` },
    });
    assert.equal(ok.status, 200);
  });

  test("a refused signature is logged at debug with its cause, and no secret reaches the log", async () => {
    const demo = JSON.parse(fs.readFileSync(path.join(dataDir, "demo-partner/partner.json"), "utf8"));
    const stale = signRequest({
      partnerId: demo.partner_id,
      privateKey: fs.readFileSync(path.join(dataDir, "demo-partner/private-key.pem"), "utf8"),
      method: "GET",
      target: "/v1/partner/asset-pairs",
      nowMs: Date.now() - 120_000,
    });
    const res = await fetch(`${svc.partnerUrl}/v1/partner/asset-pairs`, {
      headers: { ...stale, "x-request-id": "stale-1" },
    });
    assert.equal(res.status, 401);
    const findRefusal = () =>
      svc
        .output()
        .split("\n")
        .filter((l) => l.startsWith("{"))
        .map((l) => JSON.parse(l) as Record<string, unknown>)
        .find((l) => l.reqId === "stale-1" && l.authFailure !== undefined);
    // The log line travels through a pipe; give it a bounded moment to arrive.
    for (let i = 0; i < 40 && findRefusal() === undefined; i++) await new Promise((r) => setTimeout(r, 50));
    const refusal = findRefusal();
    assert.ok(refusal, "debug line with the cause");
    assert.equal(refusal.authFailure, "stale_timestamp");
    assert.equal(refusal.level, 20);
    assert.ok(!svc.output().includes(stale["X-Signature"]), "signature not logged");
    const token = fs.readFileSync(path.join(dataDir, "admin-token"), "utf8").trim();
    assert.ok(!svc.output().includes(token), "admin token not logged");
  });

  test("a second process on the same PGlite folder refuses to start, clearly", async () => {
    const second = spawnServe({ DATA_DIR: dataDir, PORT: "0", ADMIN_PORT: "0", PRICE_FEED: "manual" });
    const code = await exitOf(second.child);
    assert.equal(code, 2);
    assert.match(
      second.output(),
      /counterpart: the PGlite data folder .* is in use by process \d+; PGlite serves one process/,
    );
    assert.doesNotMatch(second.output(), /\n\s+at /);
  });

  test("SIGTERM stops it gracefully (exit 0) and releases the folder", async () => {
    assert.equal(await svc.stop(), 0);
    assert.match(svc.output(), /stopped on SIGTERM/);
    assert.equal(fs.existsSync(path.join(dataDir, "pglite", "counterpart.lock")), false);
    // The same folder starts again, with the same demo partner.
    const again = await startService({ DATA_DIR: dataDir });
    try {
      const demo = JSON.parse(fs.readFileSync(path.join(dataDir, "demo-partner/partner.json"), "utf8"));
      assert.match(again.output(), new RegExp(demo.partner_id));
    } finally {
      assert.equal(await again.stop(), 0);
    }
  });

  test("SIGTERM while the service is still starting stops it gracefully once started", async () => {
    const fresh = tempDataDir();
    try {
      const p = spawnServe({
        DATA_DIR: fresh,
        PORT: "0",
        ADMIN_PORT: "0",
        PRICE_FEED: "manual",
        LOG_LEVEL: "info",
      });
      // The migrations are logged before the listeners open: the signal lands mid-start.
      for (let i = 0; i < 600 && !p.output().includes("migrations applied"); i++) {
        if (p.child.exitCode !== null) break;
        await new Promise((r) => setTimeout(r, 50));
      }
      assert.match(p.output(), /migrations applied/);
      p.child.kill("SIGTERM");
      assert.equal(await exitOf(p.child), 0, p.output());
      assert.match(p.output(), /stopped on SIGTERM/);
      assert.equal(fs.existsSync(path.join(fresh, "pglite", "counterpart.lock")), false);
    } finally {
      fs.rmSync(fresh, { recursive: true, force: true });
    }
  });

  test("bad configuration exits 2 with one line per bad value and no stack trace", async () => {
    const bad = spawnServe({ DATA_DIR: dataDir, PORT: "99999", LOG_LEVEL: "chatty" });
    assert.equal(await exitOf(bad.child), 2);
    const lines = bad.output().trim().split("\n");
    assert.deepEqual(lines.map((l) => l.replace(/:.*$/, ": …")).sort(), ["counterpart: …", "counterpart: …"]);
    assert.match(bad.output(), /PORT: expected an integer from 0 to 65535/);
    assert.match(bad.output(), /LOG_LEVEL: expected one of/);
  });
});

describe("several API processes", () => {
  if (!onPostgres) {
    test("WORKERS above 1 is refused on PGlite (one process per folder)", async () => {
      const dataDir = tempDataDir();
      try {
        const p = spawnServe({ DATA_DIR: dataDir, WORKERS: "2", PORT: "0", ADMIN_PORT: "0" });
        assert.equal(await exitOf(p.child), 2);
        assert.match(p.output(), /WORKERS: more than one process needs PostgreSQL/);
      } finally {
        fs.rmSync(dataDir, { recursive: true, force: true });
      }
    });
    return;
  }

  test("WORKERS=2 on PostgreSQL serves from two processes on one port and stops on SIGTERM", async () => {
    const base = new URL(testDatabaseUrl!);
    const dbName = `cp_workers_${process.pid}_${Date.now()}`;
    const admin = new pg.Client({ connectionString: testDatabaseUrl! });
    await admin.connect();
    await admin.query(`CREATE DATABASE ${dbName}`);
    const dataDir = tempDataDir();
    base.pathname = `/${dbName}`;
    let svc: ServiceProcess | undefined;
    try {
      svc = await startService({
        DATA_DIR: dataDir,
        DATABASE_URL: base.toString(),
        WORKERS: "2",
        ADMIN_TOKEN: "workers-test-token-0123456789",
      });
      assert.match(svc.output(), /PostgreSQL, 2 API processes/);
      const { generateKeyPair } = await import("@counterpart/protocol");
      const keys = generateKeyPair();
      const created = await fetch(`${svc.adminUrl}/admin/partners`, {
        method: "POST",
        headers: {
          authorization: "Bearer workers-test-token-0123456789",
          "content-type": "application/json",
        },
        body: JSON.stringify({
          name: "W",
          public_key_pem: keys.publicKeyPem,
          allowed_ips: ["127.0.0.1/32", "::1/128"],
        }),
      });
      assert.equal(created.status, 201);
      const partnerId = ((await created.json()) as { result: { id: string } }).result.id;
      const results = await Promise.all(
        Array.from({ length: 40 }, () =>
          fetch(`${svc!.partnerUrl}/v1/partner/asset-pairs`, {
            headers: {
              ...signedHeaders(partnerId, keys.privateKeyPem, "GET", "/v1/partner/asset-pairs"),
              connection: "close",
            },
          }).then((r) => r.status),
        ),
      );
      assert.deepEqual(new Set(results), new Set([200]));
      const metrics = await (await fetch(`${svc.adminUrl}/metrics`)).text();
      const count =
        /counterpart_http_request_duration_seconds_count\{method="GET",route="\/v1\/partner\/asset-pairs",status="200"\} (\d+)/.exec(
          metrics,
        );
      assert.equal(Number(count?.[1]), 40, "aggregated over the workers");
      assert.equal(await svc.stop(), 0);
    } finally {
      if (svc !== undefined && svc.child.exitCode === null) await svc.stop();
      await admin.query(`DROP DATABASE IF EXISTS ${dbName} WITH (FORCE)`);
      await admin.end();
      fs.rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
