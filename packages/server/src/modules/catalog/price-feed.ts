// Prices come from a feed behind one small port. The simulated feed walks each pair's mid price
// around its seeded value (bounded to ±20%), keeps the pair's spread ratio, and ticks once a
// second; it is reproducible from a seed. Pairs the operator pinned by hand are left alone until
// they are resumed, which writes the feed's price for the pair at once (docs/decisions.md,
// "Prices").

import type { Db } from "../../db/database.ts";
import { inTransaction, type Tx } from "../../db/transaction.ts";
import type { Clock } from "../../platform/clock.ts";
import { seededRandom } from "../../platform/random.ts";
import {
  findPairPrice,
  type PairPrice,
  type PairRow,
  resumePairPrice,
  unpinnedPairPrices,
  writeFeedPrices,
} from "./price-feed-store.ts";

export type { PairRow } from "./price-feed-store.ts";

export interface PriceFeed {
  start(): void;
  stop(): Promise<void>;
  /**
   * Hands a pair back to the feed: in one statement, unpins it and writes the feed's current
   * price for it, stamped with the time the feed took that price. So the pair is never unpinned
   * with the operator's old tick (stale) nor with the operator's price presented as new. The
   * updated row; undefined when there is no such pair.
   */
  resume(pairId: string, then?: ResumeHook): Promise<PairRow | undefined>;
  /**
   * The feed's last price for the pair, and when it took it (this process's feed; while the
   * operator pins a pair the feed does not step it). null when the feed has not priced it yet.
   */
  lastTick(pairId: string): FeedTick | null;
}

/** One price the feed took for a pair, at scale 8, and when. */
export interface FeedTick {
  buy: bigint;
  sell: bigint;
  atMs: number;
}

/** Runs in the resume's transaction, after the pair is unpinned (the audit trail's entry). */
export type ResumeHook = (tx: Tx, before: PairPrice, after: PairRow) => Promise<void>;

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
  readonly #ticks = new Map<string, FeedTick>();
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

  /**
   * The feed's next tick for one pair, now: one step of its walk (from where the walk stands, or,
   * for a pair the feed has never priced, from the pair's current prices), written together with
   * the unpinning. Runs after any tick under way, never beside one.
   */
  resume(pairId: string, then?: ResumeHook): Promise<PairRow | undefined> {
    const done = this.#running.then(() => this.#resume(pairId, then));
    this.#running = done.then(
      () => {},
      () => {},
    );
    return done;
  }

  async #resume(pairId: string, then?: ResumeHook): Promise<PairRow | undefined> {
    let taken: FeedTick | null = null;
    const row = await inTransaction(this.#db, async (tx) => {
      const pair = await findPairPrice(tx, pairId);
      if (pair === undefined) return undefined;
      const next = this.#step(pair);
      const atMs = this.#clock.nowMs();
      const written = await resumePairPrice(tx, next, atMs);
      if (written !== undefined && then !== undefined) await then(tx, pair, written);
      taken = { buy: next.buy, sell: next.sell, atMs };
      return written;
    });
    // Kept once the transaction has committed.
    if (row !== undefined && taken !== null) this.#ticks.set(pairId, taken);
    return row;
  }

  /** One step of the walk for every pair not pinned by the operator. */
  async tick(): Promise<void> {
    const pairs = await unpinnedPairPrices(this.#db);
    if (pairs.length === 0) return;
    const next = pairs.map((p) => this.#step(p));
    const atMs = this.#clock.nowMs();
    await writeFeedPrices(this.#db, next, atMs);
    for (const p of next) this.#ticks.set(p.id, { buy: p.buy, sell: p.sell, atMs });
  }

  lastTick(pairId: string): FeedTick | null {
    return this.#ticks.get(pairId) ?? null;
  }

  /** One step of the pair's walk: its next buy and sell. */
  #step(p: PairPrice): PairPrice {
    const { buy, sell } = p;
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
    return { id: p.id, buy: mid + half, sell: mid - half > 0n ? mid - half : 1n };
  }
}
