// Database outages with real faults (docs/operations.md, "Database outages"): three real
// `counterpart serve` processes on a throwaway PostgreSQL cluster, one of them a primary with two
// workers, under signed traffic while the cluster is crash-restarted, has its backends terminated,
// is down for seconds, and hangs. No process may exit; every answer during a fault is a 2xx or the
// contract's 503; after the fault every process serves a signed deposit again within a few seconds.

import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { generateKeyPair, signRequest } from "@counterpart/protocol";
import { sql } from "kysely";
import { limits } from "../config/limits.ts";
import { checkLedger } from "../modules/ledger/ledger-store.ts";
import { insertClient } from "../testing/fixtures.ts";
import { type PgCluster, startPgCluster } from "../testing/pg-cluster.ts";
import { type ServiceProcess, startService, tempDataDir } from "../testing/processes.ts";
import { type DatabaseHandle, openDatabase } from "./database.ts";

const adminToken = "faults-admin-token-0123456789abcd";
const unavailableBody = { code: 503, msg: "Service Unavailable", msg_detail: null };
/** After the database answers again, every process must serve a signed deposit within this. */
const recoveryBoundMs = 5_000;
/** Starting a process on a loaded machine (the suite runs files two at a time) can be slow. */
const startMs = 90_000;

interface Outcome {
  via: number;
  status: number | "network-error";
  body: unknown;
  ms: number;
  detail?: string;
}

describe("database outages: three API processes on a throwaway PostgreSQL", { timeout: 600_000 }, () => {
  let cluster: PgCluster;
  let handle: DatabaseHandle;
  const services: ServiceProcess[] = [];
  const exits: string[] = [];
  const dataDirs: string[] = [];
  const keys = generateKeyPair();
  let partnerId = "";
  let seq = 0;
  /** A PGlite sandbox beside them: it has no connection to lose, and serves throughout. */
  let sandbox: ServiceProcess;
  let sandboxPartner: { id: string; keyPem: string };
  const sandboxStatuses: (number | string)[] = [];

  before(async () => {
    cluster = await startPgCluster();
    const url = await cluster.createDatabase("cp_faults");
    const common = { DATABASE_URL: url, ADMIN_TOKEN: adminToken, LOG_LEVEL: "warn" };
    // The first migrates, runs the admin API and the simulated price feed; the second is an
    // extra API process; the third is a primary (feed, housekeeping) with two workers.
    const envs: Record<string, string>[] = [
      { ...common, ADMIN_PORT: "0", PRICE_FEED: "simulated" },
      { ...common, ADMIN_PORT: "off" },
      { ...common, ADMIN_PORT: "off", WORKERS: "2", PRICE_FEED: "simulated" },
    ];
    for (const env of envs) {
      const dataDir = tempDataDir();
      dataDirs.push(dataDir);
      const svc = await startService({ ...env, DATA_DIR: dataDir }, startMs);
      services.push(svc);
      const n = services.length;
      svc.child.once("exit", (code, signal) => exits.push(`process ${n} exited (${code ?? signal})`));
    }
    const res = await fetch(`${services[0]!.adminUrl}/admin/partners`, {
      method: "POST",
      headers: { authorization: `Bearer ${adminToken}`, "content-type": "application/json" },
      body: JSON.stringify({
        name: "Faults",
        public_key_pem: keys.publicKeyPem,
        allowed_ips: ["127.0.0.1/32"],
      }),
      // A process's first admin request compiles its schemas; on a loaded machine that can take long.
      signal: AbortSignal.timeout(60_000),
    });
    assert.equal(res.status, 201, await res.clone().text());
    partnerId = ((await res.json()) as { result: { id: string } }).result.id;
    handle = await openDatabase({ databaseUrl: url, pgliteDir: null, poolSize: 2 });
    await insertClient(handle.db, partnerId, 1);

    const sandboxDir = tempDataDir();
    dataDirs.push(sandboxDir);
    sandbox = await startService({ DATA_DIR: sandboxDir, LOG_LEVEL: "warn", ADMIN_PORT: "off" }, startMs);
    const demo = JSON.parse(fs.readFileSync(path.join(sandboxDir, "demo-partner/partner.json"), "utf8"));
    const keyPem = fs.readFileSync(path.join(sandboxDir, "demo-partner/private-key.pem"), "utf8");
    sandboxPartner = { id: demo.partner_id, keyPem };
  });

  after(async () => {
    cluster?.thaw();
    await Promise.allSettled([...services, ...(sandbox ? [sandbox] : [])].map((s) => s.stop()));
    await handle?.close().catch(() => {});
    await cluster?.destroy();
    for (const dir of dataDirs) fs.rmSync(dir, { recursive: true, force: true });
  });

  /** One signed deposit through process `via`, with a fresh reference (and so a fresh signature). */
  async function deposit(via: number, timeoutMs = 20_000): Promise<Outcome> {
    seq++;
    const body = JSON.stringify({
      partner_client_id: "client-1",
      asset_id: "AED",
      amount: "1.00",
      partner_order_ref: `fault-${process.pid}-${seq}`,
    });
    const target = "/v1/partner/deposits";
    const headers = signRequest({
      partnerId,
      privateKey: keys.privateKeyPem,
      method: "POST",
      target,
      body,
      nowMs: Date.now(),
    });
    const started = Date.now();
    try {
      const res = await fetch(`${services[via]!.partnerUrl}${target}`, {
        method: "POST",
        headers: { ...headers, "content-type": "application/json" },
        body,
        signal: AbortSignal.timeout(timeoutMs),
      });
      const text = await res.text();
      let parsed: unknown = text;
      try {
        parsed = JSON.parse(text);
      } catch {
        // Kept as text for the failure message.
      }
      return { via, status: res.status, body: parsed, ms: Date.now() - started };
    } catch (err) {
      return { via, status: "network-error", body: null, ms: Date.now() - started, detail: String(err) };
    }
  }

  /** Signed deposits on every process, two at a time each, until `stop` resolves. */
  async function traffic(stop: Promise<unknown>): Promise<Outcome[]> {
    const outcomes: Outcome[] = [];
    let running = true;
    void stop.finally(() => {
      running = false;
    });
    const loop = async (via: number) => {
      for (let i = 0; running && i < 2_000; i++) {
        outcomes.push(await deposit(via));
        await sleep(20);
      }
    };
    const sandboxLoop = async () => {
      for (let i = 0; running && i < 2_000; i++) {
        const target = "/v1/partner/asset-pairs";
        const headers = signRequest({
          partnerId: sandboxPartner.id,
          privateKey: sandboxPartner.keyPem,
          method: "GET",
          target,
          body: "",
          nowMs: Date.now(),
        });
        try {
          const res = await fetch(`${sandbox.partnerUrl}${target}`, {
            headers,
            signal: AbortSignal.timeout(10_000),
          });
          await res.text();
          sandboxStatuses.push(res.status);
        } catch (err) {
          sandboxStatuses.push(String(err));
        }
        await sleep(50);
      }
    };
    await Promise.all([...services.flatMap((_, via) => [loop(via), loop(via)]), sandboxLoop()]);
    return outcomes;
  }

  function assertAnswers(outcomes: Outcome[], label: string): void {
    assert.ok(outcomes.length > 0, `${label}: no request was sent`);
    const count = (f: (o: Outcome) => boolean) => outcomes.filter(f).length;
    const slowest = Math.max(...outcomes.map((o) => o.ms));
    process.stdout.write(
      `# ${label}: ${outcomes.length} requests, ${count((o) => o.status === 200)} × 200, ` +
        `${count((o) => o.status === 503)} × 503, slowest ${slowest} ms\n`,
    );
    for (const o of outcomes) {
      const ok = typeof o.status === "number" && o.status >= 200 && o.status < 300;
      if (ok) continue;
      assert.equal(o.status, 503, `${label}: process ${o.via + 1} answered ${JSON.stringify(o)}`);
      assert.deepEqual(o.body, unavailableBody, label);
    }
  }

  /** Per process, the time until a signed deposit succeeds (polled), from now. */
  async function recovery(): Promise<number[]> {
    const started = Date.now();
    return Promise.all(
      services.map(async (_, via) => {
        for (let i = 0; i < 400; i++) {
          const o = await deposit(via, 10_000);
          if (o.status === 200) return Date.now() - started;
          assert.ok(o.status === 503, `recovery of process ${via + 1}: ${JSON.stringify(o)}`);
          await sleep(25);
        }
        assert.fail(`process ${via + 1} did not recover`);
      }),
    );
  }

  function assertAllAlive(): void {
    assert.deepEqual(exits, []);
    for (const [i, s] of services.entries()) {
      assert.equal(s.child.exitCode, null, `process ${i + 1} exited:\n${s.output()}`);
      assert.doesNotMatch(s.output(), /API worker exited|Unhandled|uncaught/i, `process ${i + 1}`);
    }
  }

  async function readiness(): Promise<number[]> {
    return Promise.all(
      services.map(async (s) => {
        const res = await fetch(`${s.partnerUrl}/readyz`, { signal: AbortSignal.timeout(15_000) });
        await res.text();
        return res.status;
      }),
    );
  }

  test("before any fault every process serves", async () => {
    const outcomes = await Promise.all(services.map((_, via) => deposit(via)));
    for (const o of outcomes) assert.equal(o.status, 200, JSON.stringify(o));
    assert.deepEqual(await readiness(), [200, 200, 200]);
  });

  test("(a) a crash restart of PostgreSQL: no process exits, 2xx or 503 only, quick recovery", async () => {
    const fault = (async () => {
      await sleep(500);
      await cluster.crashRestart();
      return recovery();
    })();
    const [outcomes, recoveredMs] = await Promise.all([traffic(fault), fault]);
    assertAnswers(outcomes, "crash restart");
    assert.ok(
      outcomes.some((o) => o.status === 503),
      "no request met the restart: the test did not test it",
    );
    assertAllAlive();
    process.stdout.write(`# recovery after a crash restart (ms, per process): ${recoveredMs.join(", ")}\n`);
    for (const ms of recoveredMs) assert.ok(ms < recoveryBoundMs, `recovery took ${ms} ms`);
  });

  test("(b) backends terminated five times: no process exits, 2xx or 503 only", async () => {
    const fault = (async () => {
      let terminated = 0;
      for (let i = 0; i < 5; i++) {
        await sleep(300);
        terminated += await cluster.terminateBackends("cp_faults");
      }
      assert.ok(terminated > 0, "no backend was terminated");
      return recovery();
    })();
    const [outcomes, recoveredMs] = await Promise.all([traffic(fault), fault]);
    assertAnswers(outcomes, "terminated backends");
    assertAllAlive();
    process.stdout.write(`# recovery after terminated backends (ms): ${recoveredMs.join(", ")}\n`);
    for (const ms of recoveredMs) assert.ok(ms < recoveryBoundMs, `recovery took ${ms} ms`);
  });

  test("(c) PostgreSQL down for 3 s: 503s and /readyz 503 meanwhile, service back once it answers", async () => {
    let downStatuses: number[] = [];
    const fault = (async () => {
      await sleep(300);
      await cluster.crash();
      await sleep(1_000);
      downStatuses = await readiness();
      await sleep(2_000);
      await cluster.start();
      return recovery();
    })();
    const [outcomes, recoveredMs] = await Promise.all([traffic(fault), fault]);
    assertAnswers(outcomes, "database down");
    assert.ok(
      outcomes.some((o) => o.status === 503),
      "no request was answered while the database was down",
    );
    assert.deepEqual(downStatuses, [503, 503, 503]);
    assertAllAlive();
    assert.deepEqual(await readiness(), [200, 200, 200]);
    process.stdout.write(`# recovery after 3 s down (ms): ${recoveredMs.join(", ")}\n`);
    for (const ms of recoveredMs) assert.ok(ms < recoveryBoundMs, `recovery took ${ms} ms`);
  });

  test("(d) a hung PostgreSQL (every process SIGSTOPped): bounded 503s, then service resumes", async () => {
    // Each answer waits at most for a connection or a pool slot, or for one statement's answer.
    const boundMs = Math.max(limits.databaseConnectMs, limits.databaseReadMs) + 2_000;
    cluster.freeze();
    let outcomes: Outcome[];
    let ready: number[];
    try {
      const stop = sleep(limits.databaseReadMs + limits.databaseConnectMs + 1_000);
      [outcomes, ready] = await Promise.all([traffic(stop), sleep(1_000).then(readiness)]);
    } finally {
      cluster.thaw();
    }
    assertAnswers(outcomes, "hung database");
    assert.ok(
      outcomes.filter((o) => o.status === 503).length >= services.length,
      "the hung database gave too few 503s",
    );
    for (const o of outcomes) assert.ok(o.ms <= boundMs, `an answer took ${o.ms} ms: ${JSON.stringify(o)}`);
    assert.deepEqual(ready, [503, 503, 503]);
    const recoveredMs = await recovery();
    assertAllAlive();
    process.stdout.write(`# recovery after the hang (ms): ${recoveredMs.join(", ")}\n`);
    for (const ms of recoveredMs) assert.ok(ms < recoveryBoundMs, `recovery took ${ms} ms`);
  });

  test("after every fault the ledger checks out: balances equal their postings, orders sum to zero", async () => {
    const orders = await handle.db
      .selectFrom("orders")
      .select((eb) => eb.fn.countAll<number>().as("n"))
      .executeTakeFirstOrThrow();
    assert.ok(Number(orders.n) > 0);
    assert.deepEqual(await checkLedger(handle.db), []);
  });

  test("after every fault the price feeds tick again (they did not stop for good)", async () => {
    await sleep(2_500);
    const { rows } = await sql<{ age_ms: number }>`
      SELECT (extract(epoch FROM now() - max(price_at)) * 1000)::int8 AS age_ms FROM asset_pairs
    `.execute(handle.db);
    assert.ok(rows[0]!.age_ms < 2_500, `the newest price is ${rows[0]!.age_ms} ms old`);
  });

  test("PGlite is unaffected: the sandbox beside them answered every signed request with 200", () => {
    assert.ok(sandboxStatuses.length > 0);
    assert.deepEqual(
      sandboxStatuses.filter((s) => s !== 200),
      [],
    );
    assert.equal(sandbox.child.exitCode, null);
  });
});
