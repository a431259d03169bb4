// Rate limits per partner (docs/decisions.md, "Rate limits"): one budget per class of signed
// request (reads, writes, quotes), kept by GCRA, the generic cell rate algorithm. A budget of N
// per window lets N requests through at once and refills continuously at N per window; each
// partner and class keeps one number, its theoretical arrival time (TAT). The arithmetic is in
// whole microseconds, so it is exact: the emission interval is rounded up to a whole microsecond
// and the burst is N intervals, never a rounding error away from N.
//
// Where the numbers live: in this process (a Map; JavaScript runs one request's check and update
// without interruption, so it is exact under any concurrency), or in Redis with REDIS_URL, shared
// by every API process, checked and updated by one Lua script (atomic on the server). Redis out of
// reach: the request goes through (fail open), counted in counterpart_rate_limit_fail_open_total
// and logged once per outage (platform/redis.ts); its answer carries no RateLimit fields then,
// since no budget was consulted.

import { Counter } from "prom-client";
import { limits } from "../../config/limits.ts";
import type { Clock } from "../../platform/clock.ts";
import { type SharedState, unavailable } from "../../platform/redis.ts";

export type RateClass = "reads" | "writes" | "quotes";
export const rateClasses: readonly RateClass[] = ["reads", "writes", "quotes"];

/** The operator's budgets of one partner, requests per window; null: the default. */
export interface RateLimitOverrides {
  reads: number | null;
  writes: number | null;
  quotes: number | null;
}

export const defaultRateLimits: Record<RateClass, number> = {
  reads: limits.rateLimitReadsDefault,
  writes: limits.rateLimitWritesDefault,
  quotes: limits.rateLimitQuotesDefault,
};

/** The budget that applies to a partner's class of request. */
export function effectiveLimit(overrides: RateLimitOverrides | undefined, cls: RateClass): number {
  return overrides?.[cls] ?? defaultRateLimits[cls];
}

export interface RateDecision {
  allowed: boolean;
  /** The budget: requests per window. */
  limit: number;
  /** Requests that would still go through now, after this one. */
  remaining: number;
  /** Seconds until the budget is whole again (rounded up). */
  resetSeconds: number;
  /** On a refusal: seconds until one more request goes through (at least 1). */
  retryAfterSeconds: number;
}

/** The emission interval (µs per request) and the burst span (µs) of a budget. */
function cell(limit: number, windowMs: number): { intervalUs: number; spanUs: number } {
  const intervalUs = Math.ceil((windowMs * 1000) / limit);
  return { intervalUs, spanUs: intervalUs * limit };
}

/**
 * One GCRA step, pure: given the stored TAT (µs, 0 when none), decides a request at `nowUs` and
 * returns the TAT to store when it is allowed. A stored TAT is never more than one span ahead of
 * the clock that stored it. One more than two spans ahead means the clock stepped back by more
 * than a window (a corrected clock, a test's), and the bucket starts afresh rather than refusing
 * for as long as the step; a smaller difference (processes' clocks a little apart) still counts.
 */
export function gcra(
  storedTatUs: number,
  nowUs: number,
  limit: number,
  windowMs: number,
): { decision: RateDecision; tatUs: number } {
  const { intervalUs, spanUs } = cell(limit, windowMs);
  const tat = storedTatUs - nowUs > 2 * spanUs ? nowUs : Math.max(storedTatUs, nowUs);
  const next = tat + intervalUs;
  if (next - nowUs > spanUs) {
    return { decision: refused(limit, tat - nowUs, next - spanUs - nowUs), tatUs: tat };
  }
  return { decision: allowed(limit, next - nowUs, intervalUs, spanUs), tatUs: next };
}

function allowed(limit: number, aheadUs: number, intervalUs: number, spanUs: number): RateDecision {
  return {
    allowed: true,
    limit,
    remaining: Math.floor((spanUs - aheadUs) / intervalUs),
    resetSeconds: Math.ceil(aheadUs / 1_000_000),
    retryAfterSeconds: 0,
  };
}

function refused(limit: number, aheadUs: number, waitUs: number): RateDecision {
  return {
    allowed: false,
    limit,
    remaining: 0,
    resetSeconds: Math.ceil(aheadUs / 1_000_000),
    retryAfterSeconds: Math.max(1, Math.ceil(waitUs / 1_000_000)),
  };
}

// The same step in Redis, atomic (a TAT more than two spans ahead is a clock stepped back, as above). KEYS[1]: the bucket; ARGV: now (µs), interval (µs), span (µs).
// Answers {1, TAT − now} when allowed (the new TAT stored, expiring when it has passed), {0, TAT −
// now, TAT + interval − span − now} when refused (nothing stored). Integers only: Redis turns a Lua
// number into an integer reply, and every value here is a whole number of microseconds.
const gcraScript = `
local now = tonumber(ARGV[1])
local interval = tonumber(ARGV[2])
local span = tonumber(ARGV[3])
local tat = tonumber(redis.call('GET', KEYS[1]) or '0')
if tat < now or tat - now > 2 * span then tat = now end
local nxt = tat + interval
if nxt - now > span then
  return {0, tat - now, nxt - span - now}
end
redis.call('SET', KEYS[1], string.format('%.0f', nxt), 'PX', math.ceil((nxt - now) / 1000) + 1)
return {1, nxt - now, 0}
`;

/** The most buckets kept in process before the spent ones are dropped. */
const memoryBucketsMax = 100_000;

export class RateLimiter {
  readonly #clock: Clock;
  readonly #shared: SharedState | null;
  readonly #windowMs: number;
  readonly #memory = new Map<string, number>();
  /** Requests let through unchecked because the shared state was out of reach. */
  readonly failOpen: Counter<"class">;

  constructor(options: { clock: Clock; shared: SharedState | null; windowMs?: number }) {
    this.#clock = options.clock;
    this.#shared = options.shared;
    this.#windowMs = options.windowMs ?? limits.rateLimitWindowMs;
    this.failOpen = new Counter({
      name: "counterpart_rate_limit_fail_open_total",
      help: "Signed requests let through without a rate-limit check because Redis was out of reach",
      labelNames: ["class"],
      registers: [],
    });
  }

  /** Takes one request from the partner's budget of `cls`; null: not checked (Redis away). */
  async take(partnerId: string, cls: RateClass, limit: number): Promise<RateDecision | null> {
    const nowUs = this.#clock.nowMs() * 1000;
    // The budget is part of the key: a budget the operator changes starts full, rather than
    // inheriting a debt counted in another budget's intervals.
    const key = `counterpart:rl:${partnerId}:${cls}:${limit}`;
    if (this.#shared === null) {
      const step = gcra(this.#memory.get(key) ?? 0, nowUs, limit, this.#windowMs);
      if (step.decision.allowed) this.#store(key, step.tatUs, nowUs);
      return step.decision;
    }
    const { intervalUs, spanUs } = cell(limit, this.#windowMs);
    const answer = await this.#shared.run(
      (redis) => redis.eval(gcraScript, 1, key, nowUs, intervalUs, spanUs) as Promise<unknown>,
    );
    if (answer === unavailable || !isTriple(answer)) {
      this.failOpen.inc({ class: cls });
      return null;
    }
    const [ok, aheadUs, waitUs] = answer;
    return ok === 1 ? allowed(limit, aheadUs, intervalUs, spanUs) : refused(limit, aheadUs, waitUs);
  }

  #store(key: string, tatUs: number, nowUs: number): void {
    if (this.#memory.size >= memoryBucketsMax && !this.#memory.has(key)) {
      // Buckets whose TAT has passed hold nothing a fresh bucket would not.
      for (const [k, tat] of this.#memory) if (tat <= nowUs) this.#memory.delete(k);
      if (this.#memory.size >= memoryBucketsMax) this.#memory.clear();
    }
    this.#memory.set(key, tatUs);
  }
}

function isTriple(value: unknown): value is [number, number, number] {
  return Array.isArray(value) && value.length === 3 && value.every((v) => typeof v === "number");
}
