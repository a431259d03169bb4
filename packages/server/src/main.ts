// Process entry: config → database → migrations and seed → services → listeners → signals.
// With WORKERS=N (PostgreSQL only) the primary process migrates, runs the admin API, the price
// feed and housekeeping, and forks N workers that serve the partner API on one shared port.

import cluster from "node:cluster";
import path from "node:path";
import type { FastifyInstance } from "fastify";
import { AggregatorRegistry } from "prom-client";
import { buildAdminApp, buildPartnerApp } from "./app.ts";
import { type Config, loadConfig } from "./config/config.ts";
import { limits } from "./config/limits.ts";
import { type DatabaseHandle, openDatabase } from "./db/database.ts";
import { migrate } from "./db/migrate.ts";
import { isoFromMs } from "./db/time.ts";
import { HttpMetrics } from "./http/metrics.ts";
import { englishCountryName, seedCatalog } from "./modules/catalog/index.ts";
import { type PriceFeed, SimulatedPriceFeed } from "./modules/catalog/price-feed.ts";
import { purgeExpiredSignatures } from "./modules/partners/index.ts";
import { systemClock } from "./platform/clock.ts";
import { createLogger } from "./platform/logger.ts";
import { systemRandom } from "./platform/random.ts";
import { adminToken, ensureDemoPartner, writeEndpoints } from "./sandbox.ts";
import { buildServices, type Services } from "./services.ts";

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
    await seedCatalog(database.db, englishCountryName);
  } catch (err) {
    await database.close();
    throw err;
  }
  const services = buildServices({ config, database, clock: systemClock, random: systemRandom });
  return { logger, database, services };
}

function startHousekeeping(services: Services, feed: PriceFeed | null): () => Promise<void> {
  feed?.start();
  const timer = setInterval(() => {
    purgeExpiredSignatures(services.database.db, isoFromMs(services.clock.nowMs())).catch(() => {});
  }, 60_000);
  timer.unref();
  return async () => {
    clearInterval(timer);
    await feed?.stop();
  };
}

function makeFeed(services: Services): PriceFeed | null {
  if (services.config.priceFeed !== "simulated") return null;
  return new SimulatedPriceFeed(services.database.db, services.clock, { seed: 20261121 });
}

async function listenAdmin(
  services: Services,
  logger: ReturnType<typeof createLogger>,
  metricsText: () => Promise<{ contentType: string; body: string }>,
): Promise<FastifyInstance | null> {
  const { config } = services;
  if (config.adminPort === null) return null;
  const admin = buildAdminApp(services, {
    logger: logger.child({ listener: "admin" }),
    adminToken: adminToken(config.dataDir, config.adminToken),
    metricsText,
  });
  await admin.listen({ port: config.adminPort, host: config.host });
  return admin;
}

function urlOf(app: FastifyInstance | null): string | null {
  if (app === null) return null;
  const address = app.server.address();
  if (address === null || typeof address === "string") return null;
  const host = address.family === "IPv6" ? `[${address.address}]` : address.address;
  return `http://${host}:${address.port}`;
}

async function runSingle(config: Config): Promise<RunningServer> {
  const { logger, database, services } = await prepare(config);
  const metrics = new HttpMetrics({ defaultMetrics: true });
  const demo = database.kind === "pglite" ? await ensureDemoPartner(config.dataDir, services.partners) : null;
  const api = buildPartnerApp(services, { logger, metrics });
  let admin: FastifyInstance | null = null;
  try {
    await api.listen({ port: config.port, host: config.host });
    admin = await listenAdmin(services, logger, async () => ({
      contentType: metrics.registry.contentType,
      body: await metrics.registry.metrics(),
    }));
  } catch (err) {
    await api.close();
    await database.close();
    throw err;
  }
  const stopHousekeeping = startHousekeeping(services, makeFeed(services));
  const adminUrl = urlOf(admin);
  writeEndpoints(config.dataDir, { partner_url: urlOf(api), admin_url: adminUrl });
  printBanner(urlOf(api), adminUrl, config, demo);

  return {
    partnerUrl: urlOf(api),
    adminUrl,
    close: async () => {
      await stopHousekeeping();
      await Promise.allSettled([api.close(), admin?.close()]);
      await database.close();
    },
  };
}

async function runPrimary(config: Config): Promise<RunningServer> {
  const { logger, database, services } = await prepare(config);
  const aggregator = new AggregatorRegistry();
  const admin = await listenAdmin(services, logger, async () => ({
    contentType: aggregator.contentType,
    body: await aggregator.clusterMetrics(),
  }));
  const stopHousekeeping = startHousekeeping(services, makeFeed(services));
  const adminUrl = urlOf(admin);

  let stopping = false;
  const fork = () => cluster.fork();
  cluster.on("exit", (worker, code, signal) => {
    if (stopping) return;
    logger.error({ worker: worker.process.pid, code, signal }, "API worker exited; starting another");
    setTimeout(fork, 1_000).unref();
  });
  const online: Promise<number>[] = [];
  for (let i = 0; i < config.workers; i++) {
    const worker = fork();
    online.push(new Promise((resolve) => worker.once("listening", (address) => resolve(address.port))));
  }
  // Workers share one port; with PORT=0 the primary picks it and every worker reports it.
  const [port] = await Promise.all(online);
  const partnerUrl = `http://${config.host}:${port}`;
  writeEndpoints(config.dataDir, { partner_url: partnerUrl, admin_url: adminUrl });
  printBanner(partnerUrl, adminUrl, config, null);
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
      await stopHousekeeping();
      await admin?.close();
      await database.close();
    },
  };
}

async function runWorker(config: Config): Promise<RunningServer> {
  const logger = createLogger(config.logLevel);
  const database = await openStore(config);
  const services = buildServices({ config, database, clock: systemClock, random: systemRandom });
  const metrics = new HttpMetrics({ defaultMetrics: true });
  // Constructing one installs the worker's listener that answers the primary's metrics requests.
  new AggregatorRegistry();
  AggregatorRegistry.setRegistries([metrics.registry]);
  const api = buildPartnerApp(services, { logger, metrics });
  await api.listen({ port: config.port, host: config.host });
  return {
    partnerUrl: urlOf(api),
    adminUrl: null,
    close: async () => {
      await api.close();
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
