// A second process of the service on a test context's database, whose statements are counted: what
// holds for it holds for any process that did not make a change (the context's app made it), and
// its count is what one request costs.

import assert from "node:assert/strict";
import { signRequest } from "@counterpart/protocol";
import type { FastifyInstance, LightMyRequestResponse } from "fastify";
import type { KyselyPlugin, PluginTransformQueryArgs, PluginTransformResultArgs, QueryId } from "kysely";
import { buildPartnerApp } from "../app.ts";
import { type DatabaseHandle, DatabaseUnavailableError } from "../db/database.ts";
import type { KeptFactsOutcome, KeptFactsUse } from "../platform/kept-facts-metric.ts";
import { systemRandom } from "../platform/random.ts";
import { buildServices } from "../services.ts";
import { insertClient } from "./fixtures.ts";
import type { TestContext, TestPartner } from "./harness.ts";

/**
 * Counts the statements executed through a Kysely instance: by their results, since a query built
 * from subqueries passes through transformQuery once per subquery.
 */
export class StatementCounter implements KyselyPlugin {
  count = 0;
  transformQuery(args: PluginTransformQueryArgs) {
    return args.node;
  }
  async transformResult(args: PluginTransformResultArgs) {
    this.count++;
    return args.result;
  }
}

export interface CountedProcess {
  app: FastifyInstance;
  statements: StatementCounter;
  /** How this process judged its deposits, withdrawals, quotes and executes (counterpart_kept_facts_total). */
  judged(use: KeptFactsUse, outcome: KeptFactsOutcome): Promise<number>;
  /** The three outcomes of one use at once. */
  outcomes(use: KeptFactsUse): Promise<Record<KeptFactsOutcome, number>>;
  close(): Promise<void>;
}

/** An admin API PUT (`ctx.adminRequest`) that must answer 200. */
export async function adminPut(ctx: TestContext, url: string, body: unknown): Promise<void> {
  const res = await ctx.adminRequest("PUT", url, body);
  assert.equal(res.statusCode, 200, res.body);
}

/**
 * Starts the partner API of a second process on `ctx`'s database, its statements also passed
 * through `plugins`; close it before the context.
 */
export async function startCountedProcess(
  ctx: TestContext,
  plugins: readonly KyselyPlugin[] = [],
): Promise<CountedProcess> {
  const statements = new StatementCounter();
  const shared = ctx.services.database;
  const counted: DatabaseHandle = {
    db: plugins.reduce((db, plugin) => db.withPlugin(plugin), shared.db.withPlugin(statements)),
    kind: shared.kind,
    withScriptSession: (work) => shared.withScriptSession(work),
    withReadSnapshot: (boundMs, work) => shared.withReadSnapshot(boundMs, work),
    tryAdvisoryLock: (key) => shared.tryAdvisoryLock(key),
    close: async () => {},
  };
  const services = buildServices({
    config: ctx.config,
    database: counted,
    clock: ctx.clock,
    random: systemRandom,
  });
  const app = buildPartnerApp(services, { logger: false });
  await app.ready();
  const judged = async (use: KeptFactsUse, outcome: KeptFactsOutcome) => {
    const { values } = await services.keptFacts.get();
    return values.find((v) => v.labels.use === use && v.labels.outcome === outcome)?.value ?? 0;
  };
  const outcomes = async (use: KeptFactsUse) => ({
    kept: await judged(use, "kept"),
    changed: await judged(use, "changed"),
    read: await judged(use, "read"),
  });
  return { app, statements, judged, outcomes, close: () => app.close() };
}

/**
 * Once armed, fails the next statement whose text holds `marker` after it ran (and committed, for a
 * statement of its own), as a connection lost before its answer arrived would.
 */
export class LostAfterCommit implements KyselyPlugin {
  armed = false;
  readonly #marker: string;
  readonly #marked = new Set<QueryId>();
  constructor(marker: string) {
    this.#marker = marker;
  }
  transformQuery(args: PluginTransformQueryArgs) {
    if (this.armed && JSON.stringify(args.node).includes(this.#marker)) this.#marked.add(args.queryId);
    return args.node;
  }
  async transformResult(args: PluginTransformResultArgs) {
    if (this.#marked.delete(args.queryId)) {
      this.armed = false;
      throw new DatabaseUnavailableError(new Error("Connection terminated unexpectedly"));
    }
    return args.result;
  }
}

/** While armed, fails every statement before it is sent, as a database out of reach would. */
export class Unreachable implements KyselyPlugin {
  armed = false;
  transformQuery(args: PluginTransformQueryArgs) {
    if (this.armed) throw new DatabaseUnavailableError(new Error("connect ECONNREFUSED"));
    return args.node;
  }
  async transformResult(args: PluginTransformResultArgs) {
    return args.result;
  }
}

export interface SignedPost {
  url: string;
  body: Record<string, unknown>;
  partner: TestPartner;
  /** The time it is signed at: the same request at the same time is the same signature, a replay. */
  atMs: number;
  /** The private key to sign with, when not the partner's own. */
  key?: string;
  remoteAddress?: string;
}

/** A signed JSON POST on `app`. */
export function signedPost(app: FastifyInstance, p: SignedPost): Promise<LightMyRequestResponse> {
  const payload = JSON.stringify(p.body);
  const headers = signRequest({
    partnerId: p.partner.id,
    privateKey: p.key ?? p.partner.privateKeyPem,
    method: "POST",
    target: p.url,
    body: payload,
    nowMs: p.atMs,
  });
  return app.inject({
    method: "POST",
    url: p.url,
    headers: { ...headers, "content-type": "application/json" },
    payload,
    remoteAddress: p.remoteAddress ?? "127.0.0.1",
  });
}

/** A signed AED deposit or withdrawal for `partner`'s client-1 through `app`, which must answer 200. */
export async function moveAed(
  ctx: TestContext,
  app: FastifyInstance,
  partner: TestPartner,
  kind: "deposits" | "withdrawals",
  amount: string,
  ref: string,
): Promise<void> {
  const res = await signedPost(app, {
    url: `/v1/partner/${kind}`,
    body: { partner_client_id: "client-1", asset_id: "AED", amount, partner_order_ref: ref },
    partner,
    atMs: nextMs(ctx),
  });
  assert.equal(res.statusCode, 200, res.body);
}

/**
 * A new partner whose client-1 holds `aed` AED, deposited through `app` (which so keeps the
 * partner's credentials, and the client's and the asset's facts).
 */
export async function fundedClient(
  ctx: TestContext,
  app: FastifyInstance,
  name: string,
  aed = "100000",
): Promise<{ partner: TestPartner; clientId: number }> {
  const partner = await ctx.addPartner({ name });
  const client = await insertClient(ctx.services.database.db, partner.id, 1);
  await moveAed(ctx, app, partner, "deposits", aed, `${name}-fund`);
  return { partner, clientId: client.id };
}

/** Pins BTC-AED at 350,000 to buy and 349,000 to sell through the admin API, as the trading tests price it. */
export async function pinBtcAed(ctx: TestContext): Promise<void> {
  const price = await ctx.adminRequest("PUT", "/admin/pairs/BTC-AED/price", {
    buy: "350000",
    sell: "349000",
    reason: "test set-up",
  });
  assert.equal(price.statusCode, 200, price.body);
}

/** A time for a new request on `ctx`'s clock: a millisecond after the previous one. */
export function nextMs(ctx: TestContext): number {
  ctx.clock.advance(1);
  return ctx.clock.nowMs();
}

/** An answer in the contract's error shape: its HTTP status and its body's code. */
export function assertAnswer(res: LightMyRequestResponse, status: number, code: number, why: string): void {
  assert.equal(res.statusCode, status, `${why}: ${res.body}`);
  assert.equal((res.json() as { code: number }).code, code, why);
}
