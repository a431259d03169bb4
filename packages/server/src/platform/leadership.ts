// Background jobs (the price feed, housekeeping) run in one process at a time, whichever holds a
// lock: on PostgreSQL a session-level advisory lock on a connection of its own (db/database.ts,
// tryAdvisoryLock), so several API processes on one database do not each walk the prices. The
// others try again every `retryMs`; when the leader dies, the server drops its session and its
// lock, and the next try of another process takes over. A leader whose lock connection fails
// stops its jobs at once and goes back to trying. A database outage is waited out, never thrown.

/** The work a leader does: started when the lock is taken, stopped when it is lost or given up. */
export interface LeaderJobs {
  start(): void;
  /** Stops at once (no new work begins); resolves once work under way has finished. */
  stop(): Promise<void>;
}

/** A lock held: `lost` resolves once it may no longer be held; `release` gives it up. */
export interface LeaderLock {
  readonly lost: Promise<void>;
  release(): Promise<void>;
}

interface LeadershipLogger {
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
}

export interface LeadershipOptions {
  /** The job's name in the log. */
  job: string;
  /** One try for the lock: the held lock, or null when another holds it; may throw (outage). */
  tryLock: () => Promise<LeaderLock | null>;
  jobs: LeaderJobs;
  logger: LeadershipLogger;
  /** Between tries while another process leads or the database is out of reach. */
  retryMs: number;
}

type LeadershipState = "starting" | "leader" | "standby" | "unreachable";

export class Leadership {
  readonly #options: LeadershipOptions;
  #held: LeaderLock | null = null;
  #stopped = false;
  #timer: NodeJS.Timeout | null = null;
  #attempt: Promise<void> = Promise.resolve();
  /** What was last logged, so that a state is logged when it begins, not at every try. */
  #state: LeadershipState = "starting";
  /** A loss being handled (jobs stopping); stop() waits for it. */
  #losing: Promise<void> = Promise.resolve();

  constructor(options: LeadershipOptions) {
    this.#options = options;
  }

  /** Whether this process runs the background jobs now. */
  get isLeader(): boolean {
    return this.#held !== null;
  }

  /** Starts trying for the lock (the first try at once). */
  start(): void {
    this.#schedule(0);
  }

  /** Stops the jobs if this process leads, gives the lock up, and stops trying. */
  async stop(): Promise<void> {
    this.#stopped = true;
    if (this.#timer !== null) clearTimeout(this.#timer);
    this.#timer = null;
    await this.#attempt;
    await this.#losing;
    const held = this.#held;
    this.#held = null;
    if (held === null) return;
    try {
      await this.#options.jobs.stop();
    } finally {
      await held.release();
    }
  }

  #schedule(delayMs: number): void {
    if (this.#stopped) return;
    this.#timer = setTimeout(() => {
      this.#timer = null;
      this.#attempt = this.#try();
    }, delayMs);
    this.#timer.unref();
  }

  async #try(): Promise<void> {
    const { tryLock, logger, jobs, retryMs, job } = this.#options;
    let held: LeaderLock | null;
    try {
      held = await tryLock();
    } catch (err) {
      this.#log("unreachable", () =>
        logger.warn({ err, job }, `${job}: cannot reach the database to lead; retrying`),
      );
      this.#schedule(retryMs);
      return;
    }
    if (held === null) {
      this.#log("standby", () => logger.info({ job }, `${job}: another process leads; standing by`));
      this.#schedule(retryMs);
      return;
    }
    if (this.#stopped) {
      await held.release();
      return;
    }
    this.#held = held;
    this.#log("leader", () => logger.info({ job }, `${job}: this process leads; started`));
    jobs.start();
    void held.lost.then(() => {
      this.#losing = this.#onLost(held);
    });
  }

  async #onLost(held: LeaderLock): Promise<void> {
    // Given up by stop(), which stops the jobs itself.
    if (this.#held !== held) return;
    this.#held = null;
    const { jobs, logger, retryMs, job } = this.#options;
    // stop() ends the timers before its first await: no new work begins from here on.
    const stopping = jobs.stop();
    this.#state = "starting";
    logger.warn({ job }, `${job}: lock connection lost; stopped`);
    await held.release();
    await stopping.catch(() => {});
    this.#schedule(retryMs);
  }

  #log(state: LeadershipState, write: () => void): void {
    if (this.#state === state) return;
    this.#state = state;
    write();
  }
}
