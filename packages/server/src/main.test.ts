// The service as a process (README.md "Two commands"; docs/operations.md): the zero-configuration
// sandbox, health and readiness, metrics, logs with request ids and no secrets, the PGlite folder
// lock, graceful shutdown on SIGTERM, and several API processes on PostgreSQL.

import assert from "node:assert/strict";
import fs from "node:fs";
import http from "node:http";
import net from "node:net";
import path from "node:path";
import { after, describe, test } from "node:test";
import { signRequest } from "@counterpart/protocol";
import pg from "pg";
import { limits } from "./config/limits.ts";
import { workerExecArgv } from "./main.ts";
import { onPostgres, testDatabaseUrl } from "./testing/harness.ts";
import {
  exitOf,
  type ServiceProcess,
  spawnServe,
  startScriptExecArgv,
  startService,
  tempDataDir,
} from "./testing/processes.ts";

function signedHeaders(partnerId: string, keyPem: string, method: string, target: string, body = "") {
  return signRequest({ partnerId, privateKey: keyPem, method, target, body, nowMs: Date.now() });
}

describe("the sandbox process", () => {
  const dataDir = tempDataDir();
  let svc: ServiceProcess | undefined;
  after(async () => {
    if (svc !== undefined && svc.child.exitCode === null) await svc.stop();
    fs.rmSync(dataDir, { recursive: true, force: true });
  });
  /**
   * The sandbox on dataDir, started by whichever test needs it first (and again after the SIGTERM
   * test stopped it), so that every test runs alone and in any order.
   */
  async function running(): Promise<ServiceProcess> {
    if (svc === undefined || svc.child.exitCode !== null) {
      // As `npm start` runs it, with the Node options its script gives.
      svc = await startService({ DATA_DIR: dataDir, LOG_LEVEL: "debug" }, undefined, startScriptExecArgv());
    }
    return svc;
  }

  test("starts with no configuration beyond ports, prints the demo partner, and serves", async () => {
    const svc = await running();
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

  test("npm start gives the sandbox the V8 options of an API worker, and it serves with them", async () => {
    // One process holds the API and PGlite: the same small young generation and slower-growing
    // old generation as a worker's (limits.ts) keep its memory down (docs/decisions.md).
    assert.deepEqual(startScriptExecArgv(), workerExecArgv([], undefined));
    const svc = await running();
    const argv = fs.readFileSync(`/proc/${svc.child.pid}/cmdline`, "utf8").split("\0");
    for (const option of workerExecArgv([], undefined)) assert.ok(argv.includes(option), argv.join(" "));
    assert.equal((await fetch(`${svc.partnerUrl}/readyz`)).status, 200);
  });

  test("health, readiness and request ids", async () => {
    const svc = await running();
    const health = await fetch(`${svc.partnerUrl}/healthz`);
    assert.equal(health.status, 200);
    assert.deepEqual(await health.json(), { status: "ok" });
    const ready = await fetch(`${svc.partnerUrl}/readyz`, { headers: { "x-request-id": "trace-42" } });
    assert.equal(ready.status, 200);
    assert.equal(ready.headers.get("x-request-id"), "trace-42");
    assert.equal((await fetch(`${svc.adminUrl}/healthz`)).status, 200);
  });

  test("metrics count requests by route and status on the admin listener", async () => {
    const svc = await running();
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
    // The connection caps (http/connection-caps.ts): none refused, the series there from the start.
    assert.match(text, /^counterpart_connections_refused_total\{cap="address"\} 0$/m);
    assert.match(text, /^counterpart_connections_refused_total\{cap="listener"\} 0$/m);
    assert.match(text, /^counterpart_connections_open \d+$/m);
    // The body budget (http/body-parsing.ts): nothing refused, nothing held between requests.
    assert.match(text, /^counterpart_request_bodies_refused_total 0$/m);
    assert.match(text, /^counterpart_request_body_bytes_held 0$/m);
    // The process verifies signatures with libsodium (platform/signature-verifier.ts).
    assert.match(text, /^counterpart_signature_verifier_processes\{library="libsodium"\} 1$/m);
    assert.match(text, /^counterpart_signature_verifier_processes\{library="node"\} 0$/m);
    // How deposits, withdrawals, quotes and executes were judged: every series there from the start.
    for (const use of ["deposit", "withdrawal", "quote", "execute"])
      for (const outcome of ["kept", "changed", "read"])
        assert.match(
          text,
          new RegExp(`^counterpart_kept_facts_total\\{use="${use}",outcome="${outcome}"\\} 0$`, "m"),
        );
  });

  test("the admin API needs its bearer token", async () => {
    const svc = await running();
    const res = await fetch(`${svc.adminUrl}/admin/partners`);
    assert.equal(res.status, 401);
    const token = fs.readFileSync(path.join(dataDir, "admin-token"), "utf8").trim();
    const ok = await fetch(`${svc.adminUrl}/admin/partners`, {
      headers: { authorization: `Bearer ${token}` },
    });
    assert.equal(ok.status, 200);
  });

  test("a refused signature is logged at debug with its cause, and no secret reaches the log", async () => {
    const svc = await running();
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
    await running(); // the first process, holding the folder
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
    const svc = await running();
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

  test("SIGTERM drains: a request in flight on a keep-alive connection is served, with Connection: close", async () => {
    const svc = await running();
    const demo = JSON.parse(fs.readFileSync(path.join(dataDir, "demo-partner/partner.json"), "utf8"));
    const key = fs.readFileSync(path.join(dataDir, "demo-partner/private-key.pem"), "utf8");
    const deposit = (ref: string) => {
      const body = JSON.stringify({
        partner_client_id: "nobody",
        asset_id: "AED",
        amount: "1",
        partner_order_ref: ref,
      });
      const headers = signedHeaders(demo.partner_id, key, "POST", "/v1/partner/deposits", body);
      return { body, headers };
    };
    // What the service answers this request when it is not stopping.
    const reference = deposit("drain-0");
    const expected = await fetch(`${svc.partnerUrl}/v1/partner/deposits`, {
      method: "POST",
      headers: { ...reference.headers, "content-type": "application/json" },
      body: reference.body,
    });
    const expectedBody = await expected.json();

    const { port } = new URL(svc.partnerUrl);
    const socket = net.connect(Number(port), "127.0.0.1");
    socket.on("error", () => {});
    let answer = "";
    socket.on("data", (c: Buffer) => (answer += c.toString()));
    const ended = new Promise<void>((resolve) => socket.once("close", () => resolve()));
    const inFlight = deposit("drain-1");
    const head = [
      "POST /v1/partner/deposits HTTP/1.1",
      "Host: 127.0.0.1",
      "Connection: keep-alive",
      "Content-Type: application/json",
      "X-Request-ID: drain-1",
      `Content-Length: ${Buffer.byteLength(inFlight.body)}`,
      ...Object.entries(inFlight.headers).map(([k, v]) => `${k}: ${v}`),
    ];
    const half = Math.floor(inFlight.body.length / 2);
    socket.write(`${head.join("\r\n")}\r\n\r\n${inFlight.body.slice(0, half)}`);
    // The request has begun once the service logs it (LOG_LEVEL=debug); its body is still coming.
    for (let i = 0; i < 400 && !/"reqId":"drain-1"/.test(svc.output()); i++)
      await new Promise((r) => setTimeout(r, 25));
    assert.match(svc.output(), /"reqId":"drain-1"/);

    const exit = exitOf(svc.child);
    svc.child.kill("SIGTERM");
    // The listener closes at once: a new connection is refused while the request above is pending.
    const refused = () =>
      new Promise<boolean>((resolve) => {
        const probe = net.connect(Number(port), "127.0.0.1");
        probe.once("connect", () => {
          probe.destroy();
          resolve(false);
        });
        probe.once("error", () => resolve(true));
      });
    let closed = false;
    for (let i = 0; i < 400 && !closed; i++) {
      closed = await refused();
      if (!closed) await new Promise((r) => setTimeout(r, 25));
    }
    assert.ok(closed, "the listener closed");

    socket.write(inFlight.body.slice(half));
    await ended;
    const [statusLine, ...rest] = answer.split("\r\n");
    assert.equal(statusLine, `HTTP/1.1 ${expected.status} ${http.STATUS_CODES[expected.status]}`, answer);
    assert.ok(
      rest.some((l) => /^connection: close$/i.test(l)),
      answer,
    );
    assert.deepEqual(JSON.parse(answer.slice(answer.indexOf("\r\n\r\n") + 4)), expectedBody);
    assert.equal(await exit, 0, svc.output());
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
      // The migrations are logged before the listeners open: the signal lands mid-start. Bounded
      // at 2 minutes: on a loaded machine a cold start (Node, the modules, PGlite) has taken 30 s.
      for (let i = 0; i < 2_400 && !p.output().includes("migrations applied"); i++) {
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
    // A folder of its own: the sandbox may hold dataDir, whatever ran before.
    const fresh = tempDataDir();
    const bad = spawnServe({ DATA_DIR: fresh, PORT: "99999", LOG_LEVEL: "chatty" });
    assert.equal(await exitOf(bad.child), 2);
    fs.rmSync(fresh, { recursive: true, force: true });
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
      assert.match(
        metrics,
        /^counterpart_connections_refused_total\{cap="address"\} 0$/m,
        "and so are the caps'",
      );
      assert.match(metrics, /^counterpart_connections_open \d+$/m);
      assert.match(metrics, /^counterpart_request_bodies_refused_total 0$/m, "and so are the body budgets'");
      assert.match(
        metrics,
        /^counterpart_signature_verifier_processes\{library="libsodium"\} 2$/m,
        "both workers",
      );
      assert.match(metrics, /^counterpart_signature_verifier_processes\{library="node"\} 0$/m);
      // Each worker runs with a small young generation (limits.workerSemiSpaceMib).
      const workers = fs
        .readdirSync("/proc")
        .filter((e) => /^\d+$/.test(e))
        .filter((e) => {
          try {
            const stat = fs.readFileSync(`/proc/${e}/stat`, "utf8");
            return Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]) === svc?.child.pid;
          } catch {
            return false;
          }
        })
        .map((e) => fs.readFileSync(`/proc/${e}/cmdline`, "utf8").split("\0"));
      assert.equal(workers.length, 2);
      // ...and an old generation that grows less between full collections
      // (limits.workerHeapGrowingPercent): V8 takes the option, or the workers would not serve.
      for (const argv of workers) {
        assert.ok(argv.includes(`--max-semi-space-size=${limits.workerSemiSpaceMib}`), argv.join(" "));
        assert.ok(argv.includes(`--heap-growing-percent=${limits.workerHeapGrowingPercent}`), argv.join(" "));
      }
      assert.equal(await svc.stop(), 0);
    } finally {
      if (svc !== undefined && svc.child.exitCode === null) await svc.stop();
      await admin.query(`DROP DATABASE IF EXISTS ${dbName} WITH (FORCE)`);
      await admin.end();
      fs.rmSync(dataDir, { recursive: true, force: true });
    }
  });
});

test("API workers get a small young generation and a slower-growing old one unless the operator chose them", () => {
  const semi = `--max-semi-space-size=${limits.workerSemiSpaceMib}`;
  const growing = `--heap-growing-percent=${limits.workerHeapGrowingPercent}`;
  assert.deepEqual(workerExecArgv([], undefined), [semi, growing]);
  assert.deepEqual(workerExecArgv(["--enable-source-maps"], ""), ["--enable-source-maps", semi, growing]);
  assert.deepEqual(workerExecArgv(["--max-semi-space-size=32"], undefined), [
    "--max-semi-space-size=32",
    growing,
  ]);
  assert.deepEqual(workerExecArgv([], "--max-old-space-size=512 --max-semi-space-size=16"), [growing]);
  assert.deepEqual(workerExecArgv([], "--max_semi_space_size=16"), [growing]);
  assert.deepEqual(workerExecArgv([], "--max-semi-space-size-x=1"), [semi, growing]);
  assert.deepEqual(workerExecArgv(["--heap-growing-percent=50"], undefined), [
    "--heap-growing-percent=50",
    semi,
  ]);
  assert.deepEqual(workerExecArgv(["--heap_growing_percent=50", "--max-semi-space-size=8"], undefined), [
    "--heap_growing_percent=50",
    "--max-semi-space-size=8",
  ]);
});

describe("background jobs and starts on PostgreSQL", () => {
  if (!onPostgres) return;

  /** A database of its own (advisory locks are per database), dropped after the test. */
  async function withFreshDatabase(work: (url: string) => Promise<void>): Promise<void> {
    const dbName = `cp_bg_${process.pid}_${Date.now()}`;
    const admin = new pg.Client({ connectionString: testDatabaseUrl! });
    await admin.connect();
    await admin.query(`CREATE DATABASE ${dbName}`);
    const url = new URL(testDatabaseUrl!);
    url.pathname = `/${dbName}`;
    try {
      await work(url.toString());
    } finally {
      await admin.query(`DROP DATABASE IF EXISTS ${dbName} WITH (FORCE)`);
      await admin.end();
    }
  }

  /**
   * Counts the feed's writes: each tick is one UPDATE statement of asset_pairs, counted by a
   * statement-level trigger added to this test's database.
   */
  async function countTicks(client: pg.Client): Promise<void> {
    await client.query(`
      CREATE TABLE feed_ticks (at timestamptz NOT NULL DEFAULT clock_timestamp());
      CREATE FUNCTION count_feed_tick() RETURNS trigger LANGUAGE plpgsql AS
        $$ BEGIN INSERT INTO feed_ticks DEFAULT VALUES; RETURN NULL; END $$;
      CREATE TRIGGER count_feed_tick AFTER UPDATE ON asset_pairs
        FOR EACH STATEMENT EXECUTE FUNCTION count_feed_tick();`);
  }

  /** The feed's ticks, in every process together, during the next `ms`. */
  async function ticksDuring(client: pg.Client, ms: number): Promise<number> {
    const count = async () =>
      Number((await client.query<{ n: string }>("SELECT count(*) AS n FROM feed_ticks")).rows[0]!.n);
    const before = await count();
    await new Promise((res) => setTimeout(res, ms));
    return (await count()) - before;
  }

  const leads = (s: ServiceProcess) => s.output().includes("price feed: this process leads");

  test("of three processes started together on an empty database, one runs the price feed; kill -9 it and another takes over", async () => {
    await withFreshDatabase(async (url) => {
      const dirs = [tempDataDir(), tempDataDir(), tempDataDir()];
      const services: ServiceProcess[] = [];
      const client = new pg.Client({ connectionString: url });
      try {
        // Started together on an empty database: the migrations are serialised by their lock.
        const started = await Promise.allSettled(
          dirs.map((d) =>
            startService({
              DATA_DIR: d,
              DATABASE_URL: url,
              PRICE_FEED: "simulated",
              ADMIN_PORT: "off",
            }),
          ),
        );
        for (const s of started) if (s.status === "fulfilled") services.push(s.value);
        for (const s of started) if (s.status === "rejected") throw s.reason;
        await client.connect();
        await countTicks(client);

        // Within a few seconds exactly one leads, and prices move at one feed's pace (one tick a
        // second), not three.
        for (let i = 0; i < 100 && !services.some(leads); i++) await new Promise((r) => setTimeout(r, 100));
        const ticks = await ticksDuring(client, 4_000);
        assert.ok(ticks >= 2 && ticks <= 6, `${ticks} ticks in 4 s`);
        assert.equal(services.filter(leads).length, 1, services.map((s) => s.output()).join("\n---\n"));

        const leader = services.find(leads)!;
        const others = services.filter((s) => s !== leader);
        leader.child.kill("SIGKILL");
        await exitOf(leader.child);
        const killedAt = Date.now();
        while (!others.some(leads) && Date.now() - killedAt < 10_000) {
          await new Promise((r) => setTimeout(r, 100));
        }
        assert.equal(others.filter(leads).length, 1, "another process took over within 10 s");
        const after = await ticksDuring(client, 3_000);
        assert.ok(after >= 2 && after <= 5, `${after} ticks in 3 s after the takeover`);
        for (const s of others) assert.equal(s.child.exitCode, null, "no process exited");
      } finally {
        await client.end().catch(() => {});
        for (const s of services)
          if (s.child.exitCode === null && s.child.signalCode === null) await s.stop();
        for (const d of dirs) fs.rmSync(d, { recursive: true, force: true });
      }
    });
  });

  test("a second start on a current schema applies no migration", async () => {
    await withFreshDatabase(async (url) => {
      const dataDir = tempDataDir();
      try {
        const first = await startService({ DATA_DIR: dataDir, DATABASE_URL: url, ADMIN_PORT: "off" });
        assert.match(first.output(), /migrations applied/);
        assert.equal(await first.stop(), 0);
        const second = await startService({ DATA_DIR: dataDir, DATABASE_URL: url, ADMIN_PORT: "off" });
        try {
          assert.match(second.output(), /schema current; no migration applied/);
          assert.doesNotMatch(second.output(), /migrations applied/);
          assert.equal((await fetch(`${second.partnerUrl}/readyz`)).status, 200);
        } finally {
          assert.equal(await second.stop(), 0);
        }
      } finally {
        fs.rmSync(dataDir, { recursive: true, force: true });
      }
    });
  });
});
