// Test harness: a fresh database per test context (PGlite in memory by default; a schema of its
// own in the run's PostgreSQL database when TEST_DATABASE_URL is set), the partner and admin apps
// built on it, a demo partner with a key pair, and signed requests through app.inject.

import crypto from "node:crypto";
import { generateKeyPair, signRequest } from "@counterpart/protocol";
import type { FastifyInstance, InjectOptions, LightMyRequestResponse } from "fastify";
import pg from "pg";
import { buildAdminApp, buildPartnerApp } from "../app.ts";
import { type Config, loadConfig } from "../config/config.ts";
import { type DatabaseHandle, once, openDatabase } from "../db/database.ts";
import { migrate } from "../db/migrate.ts";
import { isoFromMs } from "../db/time.ts";
import { systemNote } from "../modules/audit/index.ts";
import { englishCountryName, seedCatalog } from "../modules/catalog/index.ts";
import { ManualClock } from "../platform/clock.ts";
import type { FileStore } from "../platform/file-store.ts";
import { systemRandom } from "../platform/random.ts";
import { buildServices, type Services } from "../services.ts";

export const testDatabaseUrl: string | null = process.env.TEST_DATABASE_URL || null;
export const onPostgres = testDatabaseUrl !== null;

/** Who a test's direct service call acts as: the service itself, with a reason where one is needed. */
export const testNote = { ...systemNote, reason: "test set-up" } as const;

export interface TestPartner {
  id: string;
  privateKeyPem: string;
  publicKeyPem: string;
}

/** Opens a migrated, seeded, empty-of-partners database for one test context. */
export async function openTestDatabase(): Promise<DatabaseHandle> {
  if (testDatabaseUrl === null) {
    const database = await openDatabase({ databaseUrl: null, pgliteDir: null });
    await migrate(database);
    await seedCatalog(database.db, englishCountryName);
    return database;
  }
  const schema = `t_${process.pid}_${crypto.randomBytes(4).toString("hex")}`;
  const admin = new pg.Client({ connectionString: testDatabaseUrl });
  await admin.connect();
  try {
    await admin.query(`CREATE SCHEMA ${schema}`);
  } finally {
    await admin.end();
  }
  const database = await openDatabase({
    databaseUrl: testDatabaseUrl,
    pgliteDir: null,
    searchPath: schema,
    poolSize: 5,
  });
  await migrate(database);
  await seedCatalog(database.db, englishCountryName);
  return {
    ...database,
    close: once(async () => {
      await database.close();
      const c = new pg.Client({ connectionString: testDatabaseUrl });
      await c.connect();
      try {
        await c.query(`DROP SCHEMA ${schema} CASCADE`);
      } finally {
        await c.end();
      }
    }),
  };
}

export interface TestContext {
  readonly app: FastifyInstance;
  readonly admin: FastifyInstance;
  readonly adminToken: string;
  readonly services: Services;
  readonly clock: ManualClock;
  readonly partner: TestPartner;
  readonly config: Config;
  /** Creates another partner (allow-list: loopback and the inject address). */
  addPartner(options?: { allowIps?: string[]; name?: string }): Promise<TestPartner>;
  /** A request signed by `partner` (the context's own by default), at the clock's time. */
  signed(options: SignedInject): Promise<LightMyRequestResponse>;
  /** Admin API request with the bearer token. */
  adminRequest(method: InjectOptions["method"], url: string, body?: unknown): Promise<LightMyRequestResponse>;
  close(): Promise<void>;
}

export interface SignedInject {
  method: "GET" | "POST" | "PUT" | "DELETE" | "PATCH";
  url: string;
  /** An object is sent as JSON; a string or Buffer byte for byte. */
  body?: unknown;
  headers?: Record<string, string>;
  partner?: TestPartner;
  /** Signing time; the context clock's time by default. */
  timestampMs?: number;
  remoteAddress?: string;
}

export interface TestContextOptions {
  env?: Record<string, string>;
  /** Test-only routes added to the partner app before it is sealed (e.g. to provoke a 500). */
  extraRoutes?: (app: FastifyInstance) => void;
  /** The document store to use instead of the configured one. */
  fileStore?: FileStore;
}

export async function startTestContext(options: TestContextOptions = {}): Promise<TestContext> {
  const clock = new ManualClock(Date.UTC(2026, 10, 21, 9, 30, 0));
  const config = loadConfig({
    PRICE_FEED: "manual",
    ADMIN_TOKEN: "test-admin-token-0123456789",
    ...options.env,
  });
  const database = await openTestDatabase();
  // Prices were seeded "now" by the database's clock; tests run on the injected clock.
  await database.db
    .updateTable("asset_pairs")
    .set({ price_at: isoFromMs(clock.nowMs()) })
    .execute();
  const services = buildServices({
    config,
    database,
    clock,
    random: systemRandom,
    ...(options.fileStore === undefined ? {} : { fileStore: options.fileStore }),
  });
  // With REDIS_URL the tests start from a connected Redis (serving itself never waits for one).
  if (services.sharedState !== null && !(await services.sharedState.ready(10_000))) {
    throw new Error("the test's Redis did not answer within 10 s");
  }
  const app = buildPartnerApp(services, { logger: false });
  options.extraRoutes?.(app);
  const admin = buildAdminApp(services, {
    logger: false,
    adminToken: config.adminToken!,
    metricsText: async () => ({ contentType: "text/plain", body: "" }),
  });
  await app.ready();
  await admin.ready();

  async function addPartner(o: { allowIps?: string[]; name?: string } = {}): Promise<TestPartner> {
    const keys = generateKeyPair();
    const created = await services.partners.create(
      {
        name: o.name ?? "Test Partner",
        publicKeyPem: keys.publicKeyPem,
        allowIps: o.allowIps ?? ["127.0.0.1/32", "::1/128"],
      },
      systemNote,
    );
    if (!created.ok) throw new Error(`partner create failed: ${created.error}`);
    return { id: created.partner.id, privateKeyPem: keys.privateKeyPem, publicKeyPem: keys.publicKeyPem };
  }

  const partner = await addPartner({ name: "Partner A" });

  return {
    app,
    admin,
    adminToken: config.adminToken!,
    services,
    clock,
    partner,
    config,
    addPartner,
    async signed(o) {
      const who = o.partner ?? partner;
      let payload: string | Buffer | undefined;
      const headers: Record<string, string> = {};
      if (o.body !== undefined) {
        if (typeof o.body === "string" || Buffer.isBuffer(o.body)) payload = o.body as string | Buffer;
        else payload = JSON.stringify(o.body);
        headers["content-type"] = "application/json";
      }
      // Each request is signed a millisecond after the previous one, as a real client's would
      // be: an identical POST signed in the same millisecond is a replay.
      if (o.timestampMs === undefined) clock.advance(1);
      const sig = signRequest({
        partnerId: who.id,
        privateKey: who.privateKeyPem,
        method: o.method,
        target: o.url,
        body: payload ?? "",
        nowMs: o.timestampMs ?? clock.nowMs(),
      });
      return app.inject({
        method: o.method,
        url: o.url,
        headers: { ...headers, ...sig, ...o.headers },
        remoteAddress: o.remoteAddress ?? "127.0.0.1",
        ...(payload === undefined ? {} : { payload }),
      });
    },
    adminRequest(method, url, body) {
      return admin.inject({
        method,
        url,
        headers: { authorization: `Bearer ${config.adminToken}` },
        ...(body === undefined ? {} : { payload: body as object }),
      });
    },
    async close() {
      await Promise.allSettled([app.close(), admin.close()]);
      await services.sharedState?.close();
      await database.close();
    },
  };
}
