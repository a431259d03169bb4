// What rate limiting costs: signed reads (GET /v1/partner/asset-pairs) and signed deposits on the
// PGlite sandbox, in one run, with RATE_LIMITS=off, with the budgets in the process, and with the
// budgets (and the replay guard) in a redis-server of the bench's own (REDIS_URL). The demo
// partner's budgets are set far above the load, so every request is counted and carries its
// RateLimit fields, and none is refused. The three services run side by side, each on a fresh
// data folder, and are measured in turn, round after round (BENCH_ROUNDS, default 2).

import path from "node:path";
import { startTestRedis } from "../../packages/server/src/testing/redis-server.ts";
import {
  depositRequest,
  fetchOnce,
  loadNotes,
  measureTarget,
  onboardClient,
  printTargets,
  type RequestSpec,
  type Scenario,
  type ScenarioContext,
  type ScenarioReport,
  startService,
  type TargetResult,
} from "../lib.ts";

const adminToken = "bench-admin-token-0123456789abcdef";
const assetPairs: RequestSpec = { method: "GET", path: "/v1/partner/asset-pairs" };

type Side = "off" | "in-process" | "redis";

interface Prepared {
  side: Side;
  service: Awaited<ReturnType<typeof startService>>;
  partner: NonNullable<Awaited<ReturnType<typeof startService>>["partner"]>;
  /** Deposits under references of this side's own. */
  deposits: RequestSpec;
}

/** Starts the service for one side, raises the demo partner's budgets and makes its client. */
async function prepare(ctx: ScenarioContext, side: Side, redisUrl: string): Promise<Prepared> {
  const env: Record<string, string> = { ADMIN_TOKEN: adminToken, RATE_LIMITS: side === "off" ? "off" : "on" };
  if (side === "redis") env.REDIS_URL = redisUrl;
  const service = await startService(ctx.cleanup, {
    dataDir: path.join(ctx.scratchDir, `data-${side}`),
    env,
    name: `counterpart (${side})`,
    readyTimeoutMs: 240_000,
  });
  const partner = service.partner;
  if (partner === null || service.adminUrl === null) throw new Error("the sandbox wrote no demo partner");
  const limits = await fetch(`${service.adminUrl}/admin/partners/${partner.partnerId}/limits`, {
    method: "PUT",
    headers: { authorization: `Bearer ${adminToken}`, "content-type": "application/json" },
    body: JSON.stringify({ reads: 10_000_000, writes: 10_000_000, quotes: 10_000_000 }),
  });
  if (limits.status !== 200) throw new Error(`setting the budgets answered ${limits.status}`);
  await onboardClient(service.partnerUrl, partner, "bench-rl-1");
  const probe = await fetchOnce(service.partnerUrl, assetPairs, partner);
  const expected = side === "off" ? null : "10000000";
  if (probe.headers.get("ratelimit-limit") !== expected) {
    throw new Error(
      `${side}: RateLimit-Limit is ${probe.headers.get("ratelimit-limit")}, expected ${expected}`,
    );
  }
  return { side, service, partner, deposits: depositRequest("bench-rl-1", `rl-${side}`) };
}

async function measure(ctx: ScenarioContext, p: Prepared, what: "reads" | "deposits", round: number) {
  return measureTarget({
    label: `${what}, ${p.side}, round ${round}`,
    serverPid: p.service.child.pid,
    warmupS: ctx.warmupS,
    load: {
      connections: ctx.connections,
      durationS: ctx.durationS,
      url: p.service.partnerUrl,
      partner: p.partner,
      request: what === "reads" ? assetPairs : p.deposits,
    },
  });
}

export const rateLimits: Scenario = {
  name: "rate-limits",
  description: "signed reads and deposits (PGlite) with rate limiting off, in process, and in Redis",
  // Three sandboxes start (each a minute or more on a loaded machine), then 12 measured runs.
  budgetS: 900,

  async run(ctx): Promise<ScenarioReport> {
    const redis = await startTestRedis();
    ctx.cleanup.add("stop redis-server", () => redis.stop());
    // The three services run side by side (idle but for the one measured), and the measures
    // alternate between them, round after round: the machine's load moves between runs, and
    // alternating spreads that over every side instead of favouring one.
    const sides: Side[] = ["off", "in-process", "redis"];
    const prepared: Prepared[] = [];
    for (const side of sides) prepared.push(await prepare(ctx, side, redis.url));
    const rounds = Number(process.env.BENCH_ROUNDS ?? "2");
    const targets: TargetResult[] = [];
    const sums: Record<string, number> = {};
    for (let round = 1; round <= rounds; round++) {
      for (const what of ["reads", "deposits"] as const) {
        for (const p of prepared) {
          const t = await measure(ctx, p, what, round);
          targets.push(t);
          sums[`${what}-${p.side}`] = (sums[`${what}-${p.side}`] ?? 0) + t.reqPerSecMean;
        }
      }
    }
    const ratio = (what: string, side: Side) => sums[`${what}-${side}`]! / sums[`${what}-off`]!;
    const ratios = {
      reads_in_process_over_off: ratio("reads", "in-process"),
      reads_redis_over_off: ratio("reads", "redis"),
      deposits_in_process_over_off: ratio("deposits", "in-process"),
      deposits_redis_over_off: ratio("deposits", "redis"),
    };
    printTargets(
      `rate limits (${ctx.connections} connections, ${ctx.durationS} s each, ${ctx.warmupS} s warm-up, ${rounds} rounds)`,
      targets,
    );
    process.stdout.write(
      `\nthroughput over all rounds, against off:\n${Object.entries(ratios)
        .map(([k, v]) => `${k.padEnd(32)} ${v.toFixed(3)}`)
        .join("\n")}\n`,
    );
    return {
      name: "rate-limits",
      ok: targets.every((t) => t.ok),
      targets,
      ratios,
      serverProblems: Object.fromEntries(prepared.map((p) => [p.side, p.service.child.output.problems()])),
      notes: loadNotes(targets),
    };
  },
};
