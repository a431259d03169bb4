// A second process of the service on a test context's database, whose statements are counted: what
// holds for it holds for any process that did not make a change (the context's app made it), and
// its count is what one request costs.

import type { FastifyInstance } from "fastify";
import type { KyselyPlugin, PluginTransformQueryArgs, PluginTransformResultArgs } from "kysely";
import { buildPartnerApp } from "../app.ts";
import type { DatabaseHandle } from "../db/database.ts";
import { systemRandom } from "../platform/random.ts";
import { buildServices } from "../services.ts";
import type { TestContext } from "./harness.ts";

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
  close(): Promise<void>;
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
  return { app, statements, close: () => app.close() };
}
