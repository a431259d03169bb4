// The shared short-lived state of the API processes (REDIS_URL): one ioredis connection per
// process, every call bounded, and never a reason for a request to fail. A call that fails or
// does not answer in time reports "unavailable"; the caller then degrades (docs/operations.md,
// "Redis"): the replay guard goes to the database, the rate limits let requests through. After a
// failure Redis is not asked again for a moment (limits.redisRetryAfterFailureMs), so a hung
// server costs one bounded wait per moment, not one per request. The connection reconnects by
// itself; the log says each change of state, once.

import { Redis } from "ioredis";
import type { Logger } from "pino";
import { limits } from "../config/limits.ts";
import type { Clock } from "./clock.ts";

export const unavailable: unique symbol = Symbol("redis unavailable");
export type Unavailable = typeof unavailable;

export interface SharedStateOptions {
  url: string;
  clock: Clock;
  logger?: Logger;
  /** Bounds; limits.ts by default (tests give their own). */
  commandMs?: number;
  connectMs?: number;
  retryAfterFailureMs?: number;
}

export class SharedState {
  readonly #redis: Redis;
  readonly #clock: Clock;
  readonly #logger: Logger | undefined;
  readonly #retryAfterFailureMs: number;
  /** Until when (process clock, ms) Redis is not asked, after a failure. */
  #pausedUntilMs = 0;
  #down = false;
  #closed = false;

  constructor(options: SharedStateOptions) {
    this.#clock = options.clock;
    this.#logger = options.logger;
    this.#retryAfterFailureMs = options.retryAfterFailureMs ?? limits.redisRetryAfterFailureMs;
    this.#redis = new Redis(options.url, {
      // A command sent while the connection is down fails at once instead of waiting in a queue;
      // one that was sent is given commandMs to answer.
      enableOfflineQueue: false,
      commandTimeout: options.commandMs ?? limits.redisCommandMs,
      connectTimeout: options.connectMs ?? limits.redisConnectMs,
      maxRetriesPerRequest: 0,
      autoResendUnfulfilledCommands: false,
      // Reconnect for ever, at most redisReconnectMaxMs apart: Redis coming back is picked up.
      retryStrategy: (times) => Math.min(times * 100, limits.redisReconnectMaxMs),
      keepAlive: 10_000,
      lazyConnect: false,
    });
    // An unheard 'error' event would end the process; a lost Redis is a state, logged once.
    this.#redis.on("error", (err: Error) => this.#markDown(err));
    this.#redis.on("ready", () => this.#markUp());
  }

  /**
   * Runs one bounded call, or answers `unavailable` (Redis down, paused after a failure, or the
   * call failed or timed out). Never throws.
   */
  async run<T>(call: (redis: Redis) => Promise<T>): Promise<T | Unavailable> {
    if (this.#closed || this.#redis.status !== "ready") return unavailable;
    if (this.#clock.nowMs() < this.#pausedUntilMs) return unavailable;
    try {
      const result = await call(this.#redis);
      if (this.#down) this.#markUp();
      return result;
    } catch (err) {
      this.#pausedUntilMs = this.#clock.nowMs() + this.#retryAfterFailureMs;
      this.#markDown(err as Error);
      return unavailable;
    }
  }

  /** Whether a call would be tried now (connected, not paused after a failure). */
  get available(): boolean {
    return !this.#closed && this.#redis.status === "ready" && this.#clock.nowMs() >= this.#pausedUntilMs;
  }

  /** Resolves once connected, or false after `ms` (start-up and tests; serving never waits). */
  async ready(ms: number): Promise<boolean> {
    if (this.#redis.status === "ready") return true;
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.#redis.off("ready", onReady);
        resolve(false);
      }, ms);
      const onReady = () => {
        clearTimeout(timer);
        resolve(true);
      };
      this.#redis.once("ready", onReady);
    });
  }

  async close(): Promise<void> {
    this.#closed = true;
    this.#redis.disconnect(false);
  }

  #markDown(err: Error): void {
    if (this.#down || this.#closed) return;
    this.#down = true;
    this.#logger?.warn(
      { err: { message: err.message } },
      "redis unavailable: rate limits let requests through, the replay guard uses the database",
    );
  }

  #markUp(): void {
    this.#pausedUntilMs = 0;
    if (!this.#down) return;
    this.#down = false;
    this.#logger?.warn({}, "redis reachable again: rate limits and the replay guard use it");
  }
}
