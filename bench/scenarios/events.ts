// What events cost the money paths (issue 12, point 7; docs/reference.md §6): the same service
// twice, each on a PostgreSQL database of its own, WITH the outbox (as shipped) and WITHOUT it,
// measured in one run, in interleaved rounds (A B, then B A, ...), so that a drift of the machine
// falls on both alike:
//   - signed deposits (autocannon, 64 connections unless BENCH_CONNECTIONS), and
//   - quote → execute pairs (32 workers unless BENCH_CONNECTIONS, as in the trading scenario).
// The ratio printed is WITH ÷ WITHOUT, over the sums of all rounds (the issue's goal: ≥ 0.9).
//
// The WITHOUT arm is switched off in its own database only, right after its migrations:
// `ALTER TABLE orders DISABLE TRIGGER orders_event` (migration 0013), the one trigger that writes
// an order's event; deposits and executions write nothing else of the outbox (client and document
// events are not on these paths). Its webhook worker still polls, as the WITH arm's does; neither
// has an endpoint while the money paths are measured. Afterwards both arms are checked: the
// ledger is clean, every order of the WITH arm has its one event, and the WITHOUT arm has orders
// and no order event.
//
// Then delivery throughput, on the WITH arm: a receiver on 127.0.0.1 (answers 204) registered as
// a webhook endpoint, deposits for BENCH_DURATION_S, and the time until every event of them has
// arrived (unique X-Event-ID): events/s from the first to the last delivery, and how fast the
// backlog left at the end of the load drained.
//
// Environment (besides run.ts's):
//   BENCH_DATABASE_URL  server to create the databases on (default postgres://postgres@127.0.0.1:5432/postgres)
//   BENCH_WORKERS       API processes per arm (WORKERS; default 2)
//   BENCH_CLIENTS       verified clients the load is spread over (default 64)
//   BENCH_ROUNDS        interleaved rounds (default 3)
//   BENCH_CONNECTIONS   when set, replaces the 64 connections and the 32 workers

import crypto from "node:crypto";
import http from "node:http";
import type { AddressInfo } from "node:net";
import path from "node:path";
import { generateKeyPair } from "@counterpart/protocol";
import { sql } from "kysely";
import { type DatabaseHandle, openDatabase } from "../../packages/server/src/db/database.ts";
import { checkLedger } from "../../packages/server/src/modules/ledger/ledger-store.ts";
import { insertClient } from "../../packages/server/src/testing/fixtures.ts";
import { adminCall, adminToken, measureLoad, type Side } from "../compare.ts";
import {
  type Cleanup,
  fixed,
  type Partner,
  postgresEntry,
  printTable,
  type RequestSpec,
  runLoad,
  type Scenario,
  type ScenarioContext,
  type ScenarioReport,
  type Service,
  sleep,
  startService,
  type TargetResult,
} from "../lib.ts";
import { freshBenchDatabase, intFromEnv } from "../proc.ts";
import { runPairs, SignedClient } from "./trading.ts";

const pair = "BTC-AED";
const price = { buy: "350000", sell: "349000" };
const fundingPerClient = "100000000";
const goal = 0.9;

interface Arm {
  name: "with events" | "without events";
  dbName: string;
  service: Service;
  adminUrl: string;
  partner: Partner;
  database: DatabaseHandle;
}

async function startArm(
  ctx: ScenarioContext,
  name: Arm["name"],
  workers: number,
  clientCount: number,
): Promise<Arm> {
  const { dbName, databaseUrl } = await freshBenchDatabase(ctx.cleanup);
  const service = await startService(ctx.cleanup, {
    name: name === "with events" ? "with-events" : "without-events",
    dataDir: path.join(ctx.scratchDir, name.replace(/ /g, "-")),
    entry: postgresEntry(),
    env: {
      DATABASE_URL: databaseUrl,
      WORKERS: String(workers),
      ADMIN_TOKEN: adminToken,
      DATABASE_POOL_SIZE: "10",
      // The delivery measurement's receiver listens on loopback, over http.
      WEBHOOK_ALLOW_PRIVATE: "true",
      WEBHOOK_ALLOW_HTTP: "true",
    },
  });
  const adminUrl = service.adminUrl;
  if (adminUrl === null) throw new Error(`${name}: the service runs no admin API`);
  const database = await openDatabase({ databaseUrl, pgliteDir: null, poolSize: 2 });
  ctx.cleanup.add(`close the bench's pool (${name})`, () => database.close());
  // The switch: the migrations ran when the service started; nothing has written an order yet.
  if (name === "without events")
    await sql`ALTER TABLE orders DISABLE TRIGGER orders_event`.execute(database.db);

  const keys = generateKeyPair();
  const created = await adminCall(adminUrl, "POST", "/admin/partners", {
    name: "Bench Partner",
    public_key_pem: keys.publicKeyPem,
    allowed_ips: ["127.0.0.1/32", "::1/128"],
  });
  if (created.status !== 201) throw new Error(`partner create answered ${created.status}: ${created.body}`);
  const partner: Partner = {
    partnerId: (JSON.parse(created.body) as { result: { id: string } }).result.id,
    privateKey: crypto.createPrivateKey(keys.privateKeyPem),
  };
  const budgets = await adminCall(adminUrl, "PUT", `/admin/partners/${partner.partnerId}/limits`, {
    reads: 10_000_000,
    writes: 10_000_000,
    quotes: 10_000_000,
  });
  if (budgets.status !== 200) throw new Error(`partner limits answered ${budgets.status}: ${budgets.body}`);
  for (let n = 1; n <= clientCount; n++) await insertClient(database.db, partner.partnerId, n);
  await setPrice(adminUrl);
  const funder = new SignedClient(service.partnerUrl, partner, 1);
  try {
    for (let n = 1; n <= clientCount; n++) {
      const res = await funder.post("/v1/partner/deposits", {
        partner_client_id: `client-${n}`,
        asset_id: "AED",
        amount: fundingPerClient,
        partner_order_ref: `bench-funding-${n}`,
      });
      if (res.status !== 200)
        throw new Error(`${name}: funding client-${n} answered ${res.status}: ${res.body}`);
    }
  } finally {
    funder.close();
  }
  process.stdout.write(
    `bench: ${name}: ${service.partnerUrl} (pid ${service.child.pid}), database ${dbName}\n`,
  );
  return { name, dbName, service, adminUrl, partner, database };
}

async function setPrice(adminUrl: string): Promise<void> {
  const res = await adminCall(adminUrl, "PUT", `/admin/pairs/${pair}/price`, {
    ...price,
    reason: "bench set-up",
  });
  if (res.status !== 200) throw new Error(`price set answered ${res.status}: ${res.body}`);
}

function depositRequest(runId: string, tag: string, clientCount: number): RequestSpec {
  let n = 0;
  return {
    method: "POST",
    path: "/v1/partner/deposits",
    headers: { "content-type": "application/json" },
    body: () => {
      n++;
      return JSON.stringify({
        partner_client_id: `client-${1 + (n % clientCount)}`,
        asset_id: "AED",
        amount: "1.00",
        partner_order_ref: `bench-${runId}-${tag}-${n}`,
      });
    },
  };
}

interface PairsRun {
  pairs: number;
  perS: number;
  wallS: number;
  problems: number;
}

async function measurePairsOnce(
  cleanup: Cleanup,
  arm: Arm,
  clientCount: number,
  workersLoop: number,
  durationS: number,
): Promise<PairsRun> {
  await setPrice(arm.adminUrl);
  const client = new SignedClient(arm.service.partnerUrl, arm.partner, workersLoop);
  cleanup.add(`close the bench's HTTP connections (${arm.name})`, () => client.close());
  try {
    const run = await runPairs(client, clientCount, workersLoop, durationS);
    const problems =
      Object.values(run.non2xx).reduce((a, b) => a + b, 0) +
      Object.values(run.otherStatus).reduce((a, b) => a + b, 0) +
      run.errors;
    if (problems > 0)
      process.stdout.write(`bench: ${arm.name}: pairs: first problem ${JSON.stringify(run.firstProblem)}\n`);
    return {
      pairs: run.completed,
      perS: run.completed / (run.wallMs / 1000),
      wallS: run.wallMs / 1000,
      problems,
    };
  } finally {
    client.close();
  }
}

/** A local receiver: 204 to every POST; the arrival time of each event id's first delivery. */
async function startReceiver(cleanup: Cleanup) {
  const firstSeen = new Map<string, number>();
  let posts = 0;
  const server = http.createServer((req, res) => {
    req.resume();
    req.on("end", () => {
      posts++;
      const id = req.headers["x-event-id"];
      if (typeof id === "string" && !firstSeen.has(id)) firstSeen.set(id, performance.now());
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", resolve);
  });
  cleanup.add("stop the webhook receiver", async () => {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/bench-hooks`,
    firstSeen,
    posts: () => posts,
  };
}

export const events: Scenario = {
  name: "events",
  description:
    "the cost of the event outbox: deposits and quote → execute WITH events against WITHOUT (order trigger off), interleaved rounds on PostgreSQL; webhook delivery throughput to a local receiver",
  budgetS: 1_800,

  async run(ctx): Promise<ScenarioReport> {
    const notes: string[] = [];
    const workers = intFromEnv("BENCH_WORKERS", 2, 1, 64);
    const clientCount = intFromEnv("BENCH_CLIENTS", 64, 1, 100_000);
    const rounds = intFromEnv("BENCH_ROUNDS", 3, 1, 50);
    const connections = process.env.BENCH_CONNECTIONS ? ctx.connections : 64;
    const workersLoop = process.env.BENCH_CONNECTIONS ? ctx.connections : 32;
    const runId = crypto.randomBytes(4).toString("hex");

    const withArm = await startArm(ctx, "with events", workers, clientCount);
    const withoutArm = await startArm(ctx, "without events", workers, clientCount);
    const arms = [withArm, withoutArm] as const;

    // Warm-up: each arm's deposits and pairs once, not counted.
    if (ctx.warmupS > 0) {
      for (const arm of arms) {
        process.stdout.write(`bench: ${arm.name}: warm-up ${ctx.warmupS} s of deposits, then of pairs\n`);
        await runLoad({
          url: arm.service.partnerUrl,
          request: depositRequest(runId, `warm-${arm.name.split(" ")[0]}`, clientCount),
          partner: arm.partner,
          connections,
          durationS: ctx.warmupS,
        });
        await measurePairsOnce(ctx.cleanup, arm, clientCount, workersLoop, ctx.warmupS);
      }
    }

    const targets: TargetResult[] = [];
    const deposits: Record<Arm["name"], Side[]> = { "with events": [], "without events": [] };
    const pairsRuns: Record<Arm["name"], PairsRun[]> = { "with events": [], "without events": [] };
    for (let r = 1; r <= rounds; r++) {
      const order = r % 2 === 1 ? arms : ([withoutArm, withArm] as const);
      for (const arm of order) {
        const m = await measureLoad({
          label: `deposits round ${r} (${arm.name})`,
          rootPid: arm.service.child.pid,
          dbName: arm.dbName,
          warmupS: 0,
          load: {
            url: arm.service.partnerUrl,
            request: depositRequest(runId, `r${r}-${arm.name.split(" ")[0]}`, clientCount),
            partner: arm.partner,
            connections,
            durationS: ctx.durationS,
          },
        });
        targets.push(m.target);
        notes.push(...m.notes);
        deposits[arm.name].push(m.side);
      }
      for (const arm of order) {
        process.stdout.write(
          `bench: pairs round ${r} (${arm.name}): ${ctx.durationS} s, ${workersLoop} workers\n`,
        );
        pairsRuns[arm.name].push(
          await measurePairsOnce(ctx.cleanup, arm, clientCount, workersLoop, ctx.durationS),
        );
      }
    }

    // Both arms did their work: a clean ledger; WITH: one event per order; WITHOUT: none.
    const checks: Record<string, unknown> = {};
    let consistent = true;
    for (const arm of arms) {
      const { rows } = await sql<{ orders: string; order_events: string }>`
        SELECT (SELECT count(*) FROM orders)::text AS orders,
               (SELECT count(*) FROM events WHERE type LIKE 'order.%')::text AS order_events
      `.execute(arm.database.db);
      const ledger = await checkLedger(arm.database.db);
      const orders = Number(rows[0]?.orders);
      const orderEvents = Number(rows[0]?.order_events);
      const good =
        ledger.length === 0 && orders > clientCount && orderEvents === (arm === withArm ? orders : 0);
      consistent &&= good;
      checks[arm.name] = { orders, order_events: orderEvents, ledger_differences: ledger.length, ok: good };
      if (!good) notes.push(`INCONSISTENT ${arm.name}: ${JSON.stringify(checks[arm.name])}`);
    }

    const sumOps = (sides: Side[]) => sides.reduce((a, s) => a + s.ops, 0);
    const depositRate = (name: Arm["name"]) =>
      sumOps(deposits[name]) / (deposits[name].length * ctx.durationS);
    const pairRate = (name: Arm["name"]) =>
      pairsRuns[name].reduce((a, p) => a + p.pairs, 0) / pairsRuns[name].reduce((a, p) => a + p.wallS, 0);
    const depositRatio = depositRate("with events") / depositRate("without events");
    const pairRatio = pairRate("with events") / pairRate("without events");
    const meanOf = (sides: Side[], k: "serverCpuUsPerOp" | "pgCpuUsPerOp" | "p50Ms") =>
      sides.reduce((a, s) => a + s[k], 0) / sides.length;

    printTable(
      `the outbox's cost (${rounds} interleaved rounds of ${ctx.durationS} s, ${connections} connections for deposits, ${workersLoop} workers for pairs, ${workers} processes per arm)`,
      ["path: arm", "per round (ops/s)", "mean ops/s", "p50 ms", "srv CPU µs/op", "PG CPU µs/op", "problems"],
      [
        ...arms.map((a) => [
          `deposits: ${a.name}`,
          deposits[a.name].map((s) => fixed(s.opsPerS, 0)).join(" "),
          fixed(depositRate(a.name), 0),
          fixed(meanOf(deposits[a.name], "p50Ms"), 2),
          fixed(meanOf(deposits[a.name], "serverCpuUsPerOp"), 0),
          fixed(meanOf(deposits[a.name], "pgCpuUsPerOp"), 0),
          String(deposits[a.name].reduce((n, s) => n + s.non2xx + s.errors, 0)),
        ]),
        ...arms.map((a) => [
          `quote → execute: ${a.name}`,
          pairsRuns[a.name].map((p) => fixed(p.perS, 0)).join(" "),
          fixed(pairRate(a.name), 0),
          "",
          "",
          "",
          String(pairsRuns[a.name].reduce((n, p) => n + p.problems, 0)),
        ]),
      ],
    );
    const verdict = (x: number) => `(goal ≥ ${goal}: ${x >= goal ? "met" : "NOT met"})`;
    process.stdout.write(
      `\ndeposits: with ÷ without events ${fixed(depositRatio, 3)} ${verdict(depositRatio)}\n` +
        `quote → execute: with ÷ without events ${fixed(pairRatio, 3)} ${verdict(pairRatio)}\n`,
    );

    // Delivery throughput on the WITH arm.
    const receiver = await startReceiver(ctx.cleanup);
    const signer = new SignedClient(withArm.service.partnerUrl, withArm.partner, 1);
    ctx.cleanup.add("close the endpoint client", () => signer.close());
    const ep = await signer.post("/v1/partner/webhook-endpoints", {
      url: receiver.url,
      event_types: ["order.completed"],
    });
    signer.close();
    if (ep.status !== 201) throw new Error(`webhook endpoint answered ${ep.status}: ${ep.body}`);
    process.stdout.write(`bench: delivery: deposits for ${ctx.durationS} s, delivered to ${receiver.url}\n`);
    const loadStart = performance.now();
    const load = await runLoad({
      url: withArm.service.partnerUrl,
      request: depositRequest(runId, "hooks", clientCount),
      partner: withArm.partner,
      connections,
      durationS: ctx.durationS,
    });
    const loadEnd = performance.now();
    const deliveredAtLoadEnd = receiver.firstSeen.size;
    // The requests still in flight when the load stopped complete afterwards: count the orders
    // again at every look, until every one of them has its event delivered.
    const ordersMade = async () => {
      const { rows } = await sql<{ n: string }>`
        SELECT count(*)::text AS n FROM orders WHERE partner_order_ref LIKE ${`bench-${runId}-hooks-%`}
      `.execute(withArm.database.db);
      return Number(rows[0]?.n);
    };
    let expected = await ordersMade();
    const waitUntil = performance.now() + Math.max(120_000, ctx.durationS * 20_000);
    while (performance.now() < waitUntil) {
      await sleep(100);
      expected = await ordersMade();
      if (receiver.firstSeen.size >= expected) break;
    }
    const delivered = receiver.firstSeen.size;
    const times = [...receiver.firstSeen.values()];
    const first = Math.min(...times);
    const last = Math.max(...times);
    const throughput = delivered > 1 ? delivered / ((last - first) / 1000) : Number.NaN;
    const drainRate =
      delivered > deliveredAtLoadEnd && last > loadEnd
        ? (delivered - deliveredAtLoadEnd) / ((last - loadEnd) / 1000)
        : Number.NaN;
    const allDelivered = delivered === expected;
    const backlog = Math.max(0, expected - deliveredAtLoadEnd);
    if (!allDelivered) {
      const { rows: states } = await sql<{ status: string; n: string; error: string | null }>`
        SELECT status, count(*)::text AS n, max(last_error) AS error FROM webhook_deliveries GROUP BY status
      `.execute(withArm.database.db);
      const { rows: eps } = await sql<{ status: string; url: string }>`
        SELECT status, url FROM webhook_endpoints`.execute(withArm.database.db);
      // The feed (and so the dispatch) waits for every older transaction in the whole cluster
      // (docs/operations.md, "Events and webhooks"): name the oldest one still open, if any.
      const { rows: open } = await sql<{ datname: string; age_s: string; query: string }>`
        SELECT datname, extract(epoch FROM now() - xact_start)::int::text AS age_s, left(query, 80) AS query
        FROM pg_stat_activity WHERE backend_xid IS NOT NULL ORDER BY xact_start LIMIT 1
      `.execute(withArm.database.db);
      notes.push(
        `delivery: ${delivered} of ${expected} events arrived in time; deliveries ${JSON.stringify(states)}; ` +
          `endpoints ${JSON.stringify(eps)}; oldest open transaction in the cluster ${JSON.stringify(open[0] ?? null)}`,
      );
    }
    printTable(
      `webhook delivery to a local receiver (${workers} processes, one endpoint)`,
      [
        "events",
        "delivered",
        "POSTs",
        "deposits/s during load",
        "first→last delivery s",
        "events/s",
        "backlog at load end",
        "drain events/s",
      ],
      [
        [
          String(expected),
          String(delivered),
          String(receiver.posts()),
          fixed(load.result.requests.total / ((loadEnd - loadStart) / 1000), 0),
          fixed((last - first) / 1000, 1),
          fixed(throughput, 0),
          String(backlog),
          fixed(drainRate, 0),
        ],
      ],
    );

    return {
      name: "events",
      ok: targets.every((t) => t.ok) && consistent && allDelivered,
      targets,
      ratios: {
        "deposits with ÷ without events": depositRatio,
        "quote → execute with ÷ without events": pairRatio,
      },
      serverProblems: Object.fromEntries(
        arms.map((a) => [
          a.name,
          a.service.child.output.problems().filter((l) => l !== "counterpart: stopped on SIGTERM"),
        ]),
      ),
      notes,
      goal,
      rounds,
      how_the_outbox_is_off:
        "ALTER TABLE orders DISABLE TRIGGER orders_event, in the WITHOUT arm's own database",
      deposits_per_s: Object.fromEntries(arms.map((a) => [a.name, deposits[a.name].map((s) => s.opsPerS)])),
      pairs_per_s: Object.fromEntries(arms.map((a) => [a.name, pairsRuns[a.name].map((p) => p.perS)])),
      checks,
      delivery: {
        expected,
        delivered,
        posts: receiver.posts(),
        events_per_s: throughput,
        backlog_at_load_end: backlog,
        drain_events_per_s: drainRate,
      },
    };
  },
};
