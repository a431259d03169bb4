// Prices come from a feed behind one small port. The simulated feed walks each pair's mid price
// around its seeded value (bounded to ±20%), keeps the pair's spread ratio, and ticks once a
// second; it is reproducible from a seed. Pairs the operator pinned by hand are left alone.

import { sql } from "kysely";
import type { Db } from "../../db/database.ts";
import { moneyFromPg, moneyToPg } from "../../db/numeric.ts";
import { isoFromMs } from "../../db/time.ts";
import type { Clock } from "../../platform/clock.ts";

export interface PriceFeed {
  start(): void;
  stop(): Promise<void>;
}

/** mulberry32: a small, fast, seedable generator; quality is ample for a price simulation. */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const stepPpmMax = 1_000n; // at most 0.1% per tick
const boundPpm = 200_000n; // ±20% around the anchor

interface Walk {
  anchorMid: bigint;
  mid: bigint;
  /** half-spread as parts per million of mid */
  halfSpreadPpm: bigint;
}

export class SimulatedPriceFeed implements PriceFeed {
  readonly #db: Db;
  readonly #clock: Clock;
  readonly #random: () => number;
  readonly #intervalMs: number;
  readonly #walks = new Map<string, Walk>();
  #timer: NodeJS.Timeout | null = null;
  #running: Promise<void> = Promise.resolve();

  constructor(db: Db, clock: Clock, options: { seed: number; intervalMs?: number }) {
    this.#db = db;
    this.#clock = clock;
    this.#random = seededRandom(options.seed);
    this.#intervalMs = options.intervalMs ?? 1_000;
  }

  start(): void {
    if (this.#timer !== null) return;
    this.#timer = setInterval(() => {
      this.#running = this.#running.then(() => this.tick()).catch(() => {});
    }, this.#intervalMs);
    this.#timer.unref();
  }

  async stop(): Promise<void> {
    if (this.#timer !== null) clearInterval(this.#timer);
    this.#timer = null;
    await this.#running;
  }

  /** One step of the walk for every pair not pinned by the operator. */
  async tick(): Promise<void> {
    const pairs = await this.#db
      .selectFrom("asset_pairs")
      .select(["id", "buy", "sell"])
      .where("price_pinned", "=", false)
      .orderBy("id")
      .execute();
    if (pairs.length === 0) return;
    const rows = pairs.map((p) => {
      const buy = moneyFromPg(p.buy);
      const sell = moneyFromPg(p.sell);
      let walk = this.#walks.get(p.id);
      if (walk === undefined) {
        const mid = (buy + sell) / 2n;
        walk = {
          anchorMid: mid,
          mid,
          halfSpreadPpm: mid > 0n ? ((buy - sell) * 1_000_000n) / (2n * mid) : 0n,
        };
        this.#walks.set(p.id, walk);
      }
      const stepPpm = BigInt(Math.floor((this.#random() * 2 - 1) * Number(stepPpmMax)));
      let mid = walk.mid + (walk.mid * stepPpm) / 1_000_000n;
      const lo = walk.anchorMid - (walk.anchorMid * boundPpm) / 1_000_000n;
      const hi = walk.anchorMid + (walk.anchorMid * boundPpm) / 1_000_000n;
      mid = mid < lo ? lo : mid > hi ? hi : mid;
      walk.mid = mid;
      const half = (mid * walk.halfSpreadPpm) / 1_000_000n;
      return { id: p.id, buy: moneyToPg(mid + half), sell: moneyToPg(mid - half > 0n ? mid - half : 1n) };
    });
    const at = isoFromMs(this.#clock.nowMs());
    await sql`
      UPDATE asset_pairs AS p
      SET buy = v.buy::numeric, sell = v.sell::numeric, price_at = ${at}::timestamptz
      FROM (VALUES ${sql.join(rows.map((r) => sql`(${r.id}, ${r.buy}, ${r.sell})`))}) AS v(id, buy, sell)
      WHERE p.id = v.id AND p.price_pinned = false
    `.execute(this.#db);
  }
}
