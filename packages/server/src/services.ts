// Composition root: every service built once, with its dependencies passed explicitly.

import path from "node:path";
import type { Logger } from "pino";
import type { Config } from "./config/config.ts";
import type { DatabaseHandle } from "./db/database.ts";
import { BodyBudget } from "./http/body-parsing.ts";
import { AuditService } from "./modules/audit/index.ts";
import {
  CatalogAdminService,
  CatalogService,
  type PriceFeed,
  SimulatedPriceFeed,
} from "./modules/catalog/index.ts";
import { ClientsService } from "./modules/clients/index.ts";
import { DocumentsService, FileUrlSigner } from "./modules/documents/index.ts";
import { EventsService } from "./modules/events/index.ts";
import { FundingService, KeptFundingFacts } from "./modules/funding/index.ts";
import {
  BalancesService,
  LedgerAdminService,
  type OrdersPerCall,
  ordersPerCallHistogram,
} from "./modules/ledger/index.ts";
import { OperatorsService } from "./modules/operators/index.ts";
import { OrdersService } from "./modules/orders/index.ts";
import { PartnerAuthenticator, PartnersService, RateLimiter } from "./modules/partners/index.ts";
import { RecordsService } from "./modules/records/index.ts";
import {
  KeptQuoteFacts,
  KeptQuotes,
  TradingAdminService,
  TradingService,
  tradingCallSizes,
} from "./modules/trading/index.ts";
import { systemResolver, WebhookSigner, WebhooksService } from "./modules/webhooks/index.ts";
import type { Clock } from "./platform/clock.ts";
import { type FileStore, LocalFileStore } from "./platform/file-store.ts";
import { type KeptFactsCounter, keptFactsCounter } from "./platform/kept-facts-metric.ts";
import type { Random } from "./platform/random.ts";
import { SharedState } from "./platform/redis.ts";
import { chooseVerifier } from "./platform/signature-verifier.ts";
import { folderSecret, folderSigningKey } from "./sandbox.ts";

/** The simulated feed's seed: the same walk on every start (docs/decisions.md, "Prices"). */
const priceFeedSeed = 20261121;

export interface Services {
  readonly config: Config;
  readonly database: DatabaseHandle;
  readonly clock: Clock;
  readonly random: Random;
  readonly authenticator: PartnerAuthenticator;
  /** Redis (REDIS_URL): the replay guard's and the rate limits' shared state; null without it. */
  readonly sharedState: SharedState | null;
  /** The partners' rate-limit budgets; null with RATE_LIMITS=off. */
  readonly rateLimiter: RateLimiter | null;
  /** The request body bytes this process holds at once, shared by its listeners (BODY_BYTES_IN_FLIGHT_MAX). */
  readonly bodyBudget: BodyBudget;
  readonly partners: PartnersService;
  readonly catalog: CatalogService;
  /**
   * The price feed (PRICE_FEED=simulated), or null (manual: prices come only from the operator).
   * Built everywhere, started only in the process that holds the feed's lock (main.ts); the admin
   * API of any process resumes pairs through its own instance, which steps from the pair's prices.
   */
  readonly priceFeed: PriceFeed | null;
  readonly funding: FundingService;
  readonly balances: BalancesService;
  readonly orders: OrdersService;
  readonly trading: TradingService;
  /** How deposits, withdrawals and executes were judged: by facts kept or read (on /metrics). */
  readonly keptFacts: KeptFactsCounter;
  readonly ordersPerCall: OrdersPerCall;
  readonly fileStore: FileStore;
  readonly clients: ClientsService;
  readonly documents: DocumentsService;
  /** The partner's event feed, and the retention purge (housekeeping). */
  readonly events: EventsService;
  /** Webhook endpoints and deliveries; its worker runs in every API process (main.ts). */
  readonly webhooks: WebhooksService;
  /** The operator's side: catalog assets, trading settings and prices, the ledger check. */
  readonly catalogAdmin: CatalogAdminService;
  readonly tradingAdmin: TradingAdminService;
  readonly ledgerAdmin: LedgerAdminService;
  /** The back office's reads of orders, the ledger, clients' records and documents. */
  readonly records: RecordsService;
  /** The audit trail of operator actions (each service writes its own entries). */
  readonly audit: AuditService;
  /** Operator accounts and console sessions; sign-in links only in the sandbox (no DATABASE_URL). */
  readonly operators: OperatorsService;
}

/**
 * The store FILE_STORE names: the data folder's `files`, or the S3 bucket. The AWS SDK is loaded
 * only when the bucket is configured: loading it takes about half a second, which a process that
 * keeps its files locally should not spend at every start.
 */
export async function openFileStore(config: Config): Promise<FileStore> {
  const c = config.fileStore;
  if (c.kind === "local") return new LocalFileStore(path.join(config.dataDir, "files"));
  const { S3FileStore } = await import("./platform/s3-file-store.ts");
  return new S3FileStore({
    bucket: c.bucket,
    region: c.region,
    endpoint: c.endpoint,
    forcePathStyle: c.forcePathStyle,
  });
}

export function buildServices(deps: {
  config: Config;
  database: DatabaseHandle;
  clock: Clock;
  random: Random;
  /**
   * Where document files go (openFileStore). Without it, the local folder `<dataDir>/files`; a
   * configuration naming another store must pass it.
   */
  fileStore?: FileStore;
  /** Where the shared state's warnings go (Redis lost and back). */
  logger?: Logger;
}): Services {
  const { db } = deps.database;
  const { config } = deps;
  if (deps.fileStore === undefined && config.fileStore.kind !== "local") {
    throw new Error(`FILE_STORE=${config.fileStore.kind}: open the store with openFileStore() and pass it`);
  }
  const fileStore = deps.fileStore ?? new LocalFileStore(path.join(config.dataDir, "files"));
  // Read (or made, in the data folder) on first use only: a process that never signs a file link
  // writes nothing to the data folder.
  let fileUrlSecret: string | null = null;
  const signer = new FileUrlSigner(() => {
    fileUrlSecret ??= folderSecret(config.dataDir, "file-url-secret", config.fileUrlSecret);
    return fileUrlSecret;
  });
  const priceFeed =
    config.priceFeed === "simulated" ? new SimulatedPriceFeed(db, deps.clock, { seed: priceFeedSeed }) : null;
  const orders = new OrdersService(db, deps.clock);
  const ledgerAdmin = new LedgerAdminService(deps.database);
  const documents = new DocumentsService({
    db,
    clock: deps.clock,
    random: deps.random,
    files: fileStore,
    signer,
  });
  const events = new EventsService({
    db,
    clock: deps.clock,
    orders,
    documents,
    retentionDays: config.eventRetentionDays,
  });
  // The sandbox (PGlite) posts to loopback addresses and plain http; PostgreSQL deployments to
  // https on public addresses only, unless the operator allows private addresses or plain http.
  const sandbox = config.databaseUrl === null;
  const webhooks = new WebhooksService({
    db,
    clock: deps.clock,
    random: deps.random,
    events,
    signer: new WebhookSigner(() => folderSigningKey(config.dataDir, config.webhookSigningKey)),
    policy: {
      requireHttps: !sandbox && !config.webhookAllowHttp,
      allowLoopback: sandbox,
      allowPrivate: config.webhookAllowPrivate,
    },
    resolver: systemResolver,
    origin: config.publicUrl,
  });
  const sharedState =
    config.redisUrl === null
      ? null
      : new SharedState({
          url: config.redisUrl,
          clock: deps.clock,
          logger: deps.logger,
          commandMs: config.redisTimeoutMs,
        });
  const keptFacts = keptFactsCounter();
  const ordersPerCall = ordersPerCallHistogram();
  // SIGNATURE_VERIFIER=libsodium without a working add-on throws here: the process does not start.
  const { verifier, fallbackReason } = chooseVerifier(config.signatureVerifier);
  if (fallbackReason === null) deps.logger?.info({ library: verifier.library }, "signature verifier");
  else {
    deps.logger?.warn(
      { reason: fallbackReason },
      "signatures are verified by node:crypto, at about twice libsodium's cost (docs/operations.md, SIGNATURE_VERIFIER)",
    );
  }
  return {
    ...deps,
    sharedState,
    rateLimiter: config.rateLimits ? new RateLimiter({ clock: deps.clock, shared: sharedState }) : null,
    bodyBudget: new BodyBudget(config.bodyBytesInFlightMax),
    authenticator: new PartnerAuthenticator(db, deps.clock, sharedState, verifier),
    partners: new PartnersService(db, deps.clock, deps.random),
    catalog: new CatalogService(db),
    priceFeed,
    keptFacts,
    ordersPerCall,
    funding: new FundingService(
      db,
      new KeptFundingFacts(),
      keptFacts,
      ordersPerCall.labels({ use: "funding" }),
    ),
    balances: new BalancesService(db),
    orders,
    trading: new TradingService(
      db,
      deps.clock,
      deps.random,
      { priceStaleAfterSeconds: deps.config.priceStaleAfterSeconds },
      new KeptQuotes(),
      keptFacts,
      new KeptQuoteFacts(),
      tradingCallSizes(ordersPerCall),
    ),
    fileStore,
    clients: new ClientsService(db, deps.clock, { legalAgeYears: config.legalAgeYears }),
    documents,
    events,
    webhooks,
    catalogAdmin: new CatalogAdminService(db, deps.clock),
    tradingAdmin: new TradingAdminService(db, deps.clock, priceFeed, config.quoteLifetimeSeconds),
    ledgerAdmin,
    records: new RecordsService(db, deps.clock, fileStore, ledgerAdmin),
    audit: new AuditService(db),
    operators: new OperatorsService(db, deps.clock, deps.random, {
      signInLinks: config.databaseUrl === null,
    }),
  };
}
