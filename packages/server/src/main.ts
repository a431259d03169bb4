// Process entry: config → database → migrations and seed → services → listeners → signals.
// With WORKERS=N (PostgreSQL only) the primary process migrates, runs the admin API, competes for
// the background jobs (price feed, housekeeping), and forks N workers that serve the partner API
// on one shared port. Of several processes on one database, one at a time runs each background
// job: the one holding the job's advisory lock (platform/leadership.ts, docs/operations.md).

import cluster from "node:cluster";
import path from "node:path";
import type { FastifyInstance } from "fastify";
import { AggregatorRegistry, Gauge } from "prom-client";
import { buildAdminApp, buildPartnerApp, type Readiness } from "./app.ts";
import { type Config, loadConfig } from "./config/config.ts";
import { limits } from "./config/limits.ts";
import { type DatabaseHandle, openDatabase } from "./db/database.ts";
import { migrate } from "./db/migrate.ts";
import { isoFromMs } from "./db/time.ts";
import { LazySchemas } from "./http/lazy-schemas.ts";
import { HttpMetrics } from "./http/metrics.ts";
import type { PriceFeed } from "./modules/catalog/index.ts";
import { englishCountryName, seedCatalog } from "./modules/catalog/index.ts";
import { purgeExpiredSignatures } from "./modules/partners/index.ts";
import { systemClock } from "./platform/clock.ts";
import { type LeaderJobs, Leadership } from "./platform/leadership.ts";
import { createLogger } from "./platform/logger.ts";
import { systemRandom } from "./platform/random.ts";
import type { S3FileStore } from "./platform/s3-file-store.ts";
import { adminToken, ensureDemoPartner, writeEndpoints } from "./sandbox.ts";
import { buildServices, openFileStore, type Services } from "./services.ts";

export interface RunningServer {
  partnerUrl: string | null;
  adminUrl: string | null;
  close(): Promise<void>;
}

export async function openStore(config: Config, poolSize?: number): Promise<DatabaseHandle> {
  return openDatabase({
    databaseUrl: config.databaseUrl,
    pgliteDir: path.join(config.dataDir, "pglite"),
    poolSize: poolSize ?? config.databasePoolSize,
  });
}

/** Starts the service as configured by `env`; resolves once it listens. */
export async function runServer(env: Record<string, string | undefined>): Promise<RunningServer> {
  const config = loadConfig(env);
  if (cluster.isWorker) return runWorker(config);
  if (config.workers > 1) return runPrimary(config);
  return runSingle(config);
}

async function prepare(config: Config) {
  const logger = createLogger(config.logLevel);
  const database = await openStore(config);
  try {
    const applied = await migrate(database);
    if (applied.length > 0) logger.info({ applied }, "migrations applied");
    else logger.info({}, "schema current; no migration applied");
    await seedCatalog(database.db, englishCountryName, { quoteLifetimeSeconds: config.quoteLifetimeSeconds });
  } catch (err) {
    await database.close();
    throw err;
  }
  const fileStore = await openFileStore(config);
  const services = buildServices({
    config,
    database,
    clock: systemClock,
    random: systemRandom,
    fileStore,
    logger,
  });
  checkFileStore(services, logger);
  return { logger, database, services };
}

/**
 * Says in the log whether the S3 bucket answers as the service needs, without holding up the
 * start: a bucket that is down or misconfigured fails document uploads and downloads (503), never
 * the rest of the service (docs/operations.md, "Document storage").
 */
function checkFileStore(services: Services, logger: ReturnType<typeof createLogger>): void {
  const c = services.config.fileStore;
  if (c.kind !== "s3") return;
  const store = services.fileStore as S3FileStore;
  const where = { bucket: c.bucket, endpoint: c.endpoint ?? `AWS ${c.region}` };
  store.check().then(
    (problem) => {
      if (problem === null) logger.info(where, "file store: the S3 bucket answers");
      else
        logger.warn(
          { ...where, problem },
          "file store: the S3 bucket does not answer as needed; documents fail with 503 until it does",
        );
    },
    () => {},
  );
}

/**
 * The advisory lock keys of the background jobs, one per job, so that only processes that run a
 * job compete for it (a process with PRICE_FEED=manual never takes the feed's lock). Keys in use:
 * 7346201991 migrations (db/migrate.ts, held for a transaction); 7346201992 housekeeping and
 * 7346201993 price feed (held for a session, by the process that runs the job).
 */
export const backgroundJobLockKeys = { housekeeping: 7_346_201_992, priceFeed: 7_346_201_993 } as const;

/** How often a process that does not lead a job tries for its lock. */
const leadershipRetryMs = 1_000;

/**
 * How often the leader of housekeeping purges expired signatures (replay guard), old events, and
 * ended operator sessions, expired sign-in links and old refused sign-ins.
 */
const purgeIntervalMs = 60_000;

/**
 * How long one tick of housekeeping rolls the orders' days up at most (OrdersService.rollDays);
 * a backlog (the first start on a database with months of orders) goes on at the next tick.
 */
const rollDaysBudgetMs = 5_000;

/** The purges and the roll-up of housekeeping (purgeIntervalMs), by its leader only. */
export function housekeepingJob(services: Services, logger: ReturnType<typeof createLogger>): LeaderJobs {
  let timer: NodeJS.Timeout | null = null;
  /** The roll-up under way, if any: the next tick starts none beside it, and stop() waits for it. */
  let rolling: Promise<void> | null = null;
  let stopping = false;
  /** Whether the roll-up's being held back by sessions it cannot see has been logged. */
  let unseenLogged = false;
  const rollDays = async () => {
    try {
      const run = await services.orders.rollDays({ budgetMs: rollDaysBudgetMs, stopping: () => stopping });
      if (run.until === null) {
        if (!unseenLogged)
          logger.warn(
            { sessions: run.unseen },
            "the orders' days are not rolled up while sessions of another role are connected to the database: " +
              "when their transactions began cannot be seen (grant pg_read_all_stats to the service's role); " +
              "orders pages stay exact, their totals counted",
          );
        unseenLogged = true;
        return;
      }
      if (unseenLogged)
        logger.info("the orders' days are rolled up again: every session's transactions can be seen");
      unseenLogged = false;
      if (run.days > 0)
        logger.info({ days: run.days, until: run.until, done: run.done }, "rolled the orders' days up");
    } catch (err) {
      if (!stopping) logger.warn({ err }, "rolling the orders' days up failed; retrying at the next tick");
    }
  };
  return {
    start() {
      stopping = false;
      timer = setInterval(() => {
        purgeExpiredSignatures(services.database.db, isoFromMs(services.clock.nowMs())).catch(() => {});
        services.events.purge().catch(() => {});
        services.operators.purgeEnded().catch(() => {});
        rolling ??= rollDays().finally(() => {
          rolling = null;
        });
      }, purgeIntervalMs);
      timer.unref();
    },
    async stop() {
      stopping = true;
      if (timer !== null) clearInterval(timer);
      timer = null;
      await rolling;
    },
  };
}

interface BackgroundJobs {
  /** Each job this process competes for, and whether it leads it now. */
  leaders(): { job: string; leader: boolean }[];
  /** Stops the jobs led here and gives their locks up. */
  stop(): Promise<void>;
}

/** Competes for each background job: housekeeping always, the price feed when it is simulated. */
function startBackgroundJobs(
  services: Services,
  logger: ReturnType<typeof createLogger>,
  feed: PriceFeed | null,
): BackgroundJobs {
  const compete = (job: string, key: number, jobs: LeaderJobs) => {
    const leadership = new Leadership({
      job,
      tryLock: () => services.database.tryAdvisoryLock(key),
      jobs,
      logger,
      retryMs: leadershipRetryMs,
    });
    leadership.start();
    return { job, leadership };
  };
  const all = [
    compete("housekeeping", backgroundJobLockKeys.housekeeping, housekeepingJob(services, logger)),
  ];
  if (feed !== null) all.push(compete("price feed", backgroundJobLockKeys.priceFeed, feed));
  return {
    leaders: () => all.map(({ job, leadership }) => ({ job, leader: leadership.isLeader })),
    stop: async () => {
      await Promise.all(all.map(({ leadership }) => leadership.stop()));
    },
  };
}

async function listenAdmin(
  services: Services,
  logger: ReturnType<typeof createLogger>,
  schemas: LazySchemas,
  metricsText: () => Promise<{ contentType: string; body: string }>,
): Promise<FastifyInstance | null> {
  const { config } = services;
  if (config.adminPort === null) return null;
  const admin = buildAdminApp(services, {
    logger: logger.child({ listener: "admin" }),
    schemas,
    adminToken: adminToken(config.dataDir, config.adminToken),
    metricsText,
  });
  await admin.listen({ port: config.adminPort, host: config.host });
  return admin;
}

/**
 * The route schemas left to compile (http/lazy-schemas.ts), compiled in the background once the
 * process serves; a schema that does not compile is logged (its route answers 500 until fixed).
 */
function warmSchemas(schemas: LazySchemas, logger: ReturnType<typeof createLogger>): void {
  schemas.warm().then(
    (failures) => {
      for (const err of failures) logger.error({ err }, "a route schema does not compile");
    },
    (err: unknown) => logger.error({ err }, "compiling the route schemas failed"),
  );
}

/** What /readyz reports: stopping once close() began, and the jobs led (none until they start). */
class ProcessReadiness implements Readiness {
  #stopping = false;
  #jobs: BackgroundJobs | null = null;
  stopping(): boolean {
    return this.#stopping;
  }
  backgroundJobs(): { job: string; leader: boolean }[] {
    return this.#jobs?.leaders() ?? [];
  }
  jobsStarted(jobs: BackgroundJobs): void {
    this.#jobs = jobs;
  }
  beginStopping(): void {
    this.#stopping = true;
  }
}

function urlOf(app: FastifyInstance | null): string | null {
  if (app === null) return null;
  const address = app.server.address();
  if (address === null || typeof address === "string") return null;
  const host = address.family === "IPv6" ? `[${address.address}]` : address.address;
  return `http://${host}:${address.port}`;
}

/** The services' own metrics, exported with the HTTP ones. */
function registerServiceMetrics(services: Services, metrics: HttpMetrics): void {
  if (services.rateLimiter !== null) metrics.registry.registerMetric(services.rateLimiter.failOpen);
  metrics.registry.registerMetric(services.keptFacts);
  metrics.registry.registerMetric(services.ordersPerCall);
}

async function runSingle(config: Config): Promise<RunningServer> {
  const { logger, database, services } = await prepare(config);
  const metrics = new HttpMetrics({ defaultMetrics: true });
  registerServiceMetrics(services, metrics);
  const demo = database.kind === "pglite" ? await ensureDemoPartner(config.dataDir, services.partners) : null;
  const schemas = new LazySchemas();
  const readiness = new ProcessReadiness();
  const api = buildPartnerApp(services, { logger, metrics, schemas, readiness });
  let admin: FastifyInstance | null = null;
  try {
    await api.listen({ port: config.port, host: config.host });
    admin = await listenAdmin(services, logger, schemas, async () => ({
      contentType: metrics.registry.contentType,
      body: await metrics.registry.metrics(),
    }));
  } catch (err) {
    await api.close();
    await services.sharedState?.close();
    await database.close();
    throw err;
  }
  const background = startBackgroundJobs(services, logger, services.priceFeed);
  // Every API process delivers webhooks; they share the work through the database.
  services.webhooks.startWorker(logger);
  readiness.jobsStarted(background);
  new Gauge({
    name: "counterpart_background_job_leader",
    help: "1 while this process runs the background job (it holds the job's lock), else 0",
    labelNames: ["job"],
    registers: [metrics.registry],
    collect() {
      for (const { job, leader } of background.leaders()) this.set({ job }, leader ? 1 : 0);
    },
  });
  const adminUrl = urlOf(admin);
  writeEndpoints(config.dataDir, { partner_url: urlOf(api), admin_url: adminUrl });
  printBanner(urlOf(api), adminUrl, config, demo);
  warmSchemas(schemas, logger);

  return {
    partnerUrl: urlOf(api),
    adminUrl,
    close: async () => {
      readiness.beginStopping();
      await background.stop();
      await services.webhooks.stopWorker();
      await Promise.allSettled([api.close(), admin?.close()]);
      await services.sharedState?.close();
      await database.close();
    },
  };
}

/** The V8 options an API worker of WORKERS=N gets unless the operator gave them (limits.ts). */
const workerV8Defaults: readonly (readonly [flag: string, value: number])[] = [
  ["--max-semi-space-size", limits.workerSemiSpaceMib],
  ["--heap-growing-percent", limits.workerHeapGrowingPercent],
];

/**
 * The V8 options an API worker starts with: the primary's, then a small young generation
 * (limits.workerSemiSpaceMib) and an old generation that grows less between full collections
 * (limits.workerHeapGrowingPercent), each unless the operator gave it (in NODE_OPTIONS, where
 * Node allows it, or on the command line).
 */
export function workerExecArgv(execArgv: readonly string[], nodeOptions: string | undefined): string[] {
  // V8 reads `_` and `-` alike in its option names.
  const given = [...execArgv, ...(nodeOptions ?? "").split(/\s+/)].map((a) => a.replaceAll("_", "-"));
  const added = workerV8Defaults
    .filter(([flag]) => !given.some((a) => a === flag || a.startsWith(`${flag}=`)))
    .map(([flag, value]) => `${flag}=${value}`);
  return [...execArgv, ...added];
}

async function runPrimary(config: Config): Promise<RunningServer> {
  const { logger, database, services } = await prepare(config);
  cluster.setupPrimary({ execArgv: workerExecArgv(process.execArgv, process.env.NODE_OPTIONS) });
  const aggregator = new AggregatorRegistry();
  const schemas = new LazySchemas();
  const admin = await listenAdmin(services, logger, schemas, async () => ({
    contentType: aggregator.contentType,
    body: await aggregator.clusterMetrics(),
  }));
  const background = startBackgroundJobs(services, logger, services.priceFeed);
  const adminUrl = urlOf(admin);

  let stopping = false;
  const fork = () => {
    try {
      const worker = cluster.fork();
      // A worker that cannot be messaged (it died between fork and send) emits 'error'; without a
      // listener that would end the primary, and with it every worker.
      worker.on("error", (err) => logger.error({ err, worker: worker.process.pid }, "API worker error"));
    } catch (err) {
      logger.error({ err }, "could not start an API worker");
      if (!stopping) setTimeout(fork, 1_000).unref();
    }
  };
  cluster.on("exit", (worker, code, signal) => {
    if (stopping) return;
    logger.error({ worker: worker.process.pid, code, signal }, "API worker exited; starting another");
    setTimeout(fork, 1_000).unref();
  });
  // Workers share one port; with PORT=0 the primary picks it and every worker reports it. A worker
  // that dies before it listens is replaced (above), so the start waits for N workers listening,
  // whichever they are, and no longer than the bound.
  const port = await new Promise<number>((resolve, reject) => {
    let listening = 0;
    const timer = setTimeout(() => {
      cluster.off("listening", onListening);
      reject(new Error(`API workers did not listen within ${limits.workerStartMs} ms`));
    }, limits.workerStartMs);
    function onListening(_worker: unknown, address: { port: number }) {
      listening++;
      if (listening < config.workers) return;
      clearTimeout(timer);
      cluster.off("listening", onListening);
      resolve(address.port);
    }
    cluster.on("listening", onListening);
    for (let i = 0; i < config.workers; i++) fork();
  }).catch(async (err: unknown) => {
    stopping = true;
    for (const w of Object.values(cluster.workers ?? {})) w?.process.kill("SIGKILL");
    await background.stop();
    await admin?.close();
    await services.sharedState?.close();
    await database.close();
    throw err;
  });
  const partnerUrl = `http://${config.host}:${port}`;
  writeEndpoints(config.dataDir, { partner_url: partnerUrl, admin_url: adminUrl });
  printBanner(partnerUrl, adminUrl, config, null);
  warmSchemas(schemas, logger);
  return {
    partnerUrl,
    adminUrl,
    close: async () => {
      stopping = true;
      const exits = Object.values(cluster.workers ?? {}).map(
        (w) =>
          new Promise<void>((resolve) => {
            if (w === undefined || w.isDead()) return resolve();
            w.once("exit", () => resolve());
            w.process.kill("SIGTERM");
          }),
      );
      await Promise.all(exits);
      await background.stop();
      await admin?.close();
      await services.sharedState?.close();
      await database.close();
    },
  };
}

async function runWorker(config: Config): Promise<RunningServer> {
  const logger = createLogger(config.logLevel);
  const database = await openStore(config);
  const fileStore = await openFileStore(config);
  const services = buildServices({
    config,
    database,
    clock: systemClock,
    random: systemRandom,
    fileStore,
    logger,
  });
  const metrics = new HttpMetrics({ defaultMetrics: true });
  registerServiceMetrics(services, metrics);
  // Constructing one installs the worker's listener that answers the primary's metrics requests.
  new AggregatorRegistry();
  AggregatorRegistry.setRegistries([metrics.registry]);
  const schemas = new LazySchemas();
  // A worker competes for no background job (its primary does); it reports none.
  const readiness = new ProcessReadiness();
  const api = buildPartnerApp(services, { logger, metrics, schemas, readiness });
  await api.listen({ port: config.port, host: config.host });
  services.webhooks.startWorker(logger);
  warmSchemas(schemas, logger);
  return {
    partnerUrl: urlOf(api),
    adminUrl: null,
    close: async () => {
      await services.webhooks.stopWorker();
      readiness.beginStopping();
      await api.close();
      await services.sharedState?.close();
      await database.close();
    },
  };
}

function printBanner(
  partnerUrl: string | null,
  adminUrl: string | null,
  config: Config,
  demo: { partnerId: string; privateKeyPath: string } | null,
): void {
  const rel = (p: string) => path.relative(process.cwd(), p) || ".";
  const lines = [
    "",
    `Counterpart is running (${config.databaseUrl === null ? "sandbox: PGlite" : "PostgreSQL"}, ${config.workers} API process${config.workers > 1 ? "es" : ""})`,
    `  partner API    ${partnerUrl}`,
    `  admin API      ${adminUrl ?? "off"}${config.adminToken === null && adminUrl ? `   token: ${rel(path.join(config.dataDir, "admin-token"))}` : ""}`,
  ];
  if (demo !== null) {
    lines.push(`  demo partner   ${demo.partnerId}`, `  private key    ${rel(demo.privateKeyPath)}`);
    lines.push(`  try it         npm run counterpart -- call GET /v1/partner/asset-pairs`);
  }
  lines.push("");
  process.stdout.write(`${lines.join("\n")}\n`);
}

/**
 * Runs until SIGTERM or SIGINT, then closes listeners (in-flight requests finish) and the store.
 * Call it with the start promise, before the service listens: a signal that arrives while it is
 * still starting waits for the start and then stops it gracefully, instead of killing the process.
 */
export function closeOnSignals(starting: Promise<RunningServer>): void {
  let closing = false;
  const onSignal = (signal: NodeJS.Signals) => {
    if (closing) return;
    closing = true;
    const force = setTimeout(() => {
      process.stderr.write(`counterpart: shutdown took longer than ${limits.shutdownGraceMs} ms; exiting\n`);
      process.exit(1);
    }, limits.shutdownGraceMs);
    force.unref();
    starting
      .then((server) => server.close())
      .then(
        () => {
          process.stderr.write(`counterpart: stopped on ${signal}\n`);
          process.exit(0);
        },
        (err: unknown) => {
          process.stderr.write(`counterpart: error while stopping: ${String(err)}\n`);
          process.exit(1);
        },
      );
  };
  process.on("SIGTERM", onSignal);
  process.on("SIGINT", onSignal);
}
