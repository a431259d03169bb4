// The hot reads' statements in process, on PostgreSQL: the service's own store functions, each read
// kept (built and compiled by Kysely once per shape, db/kept-statement.ts) against the same read
// built and compiled at every call, the reference. The reference is the same code given a Kysely
// instance with a fresh plugin at each call (an identity plugin: a kept statement is kept per set
// of plugins, so it is built again), so both send the same text and the same values to the same
// pool. The ratio compares it with the kept statement run through one such plugin for every call
// (the plugin's own cost on both sides); the kept statement without a plugin, as the service runs
// it, is printed beside them. CPU per call of this process (process.cpuUsage), sequential calls,
// rounds alternated.
//
// Environment (besides run.ts's): BENCH_DATABASE_URL (see deposits.ts); BENCH_STATEMENT_CALLS
// calls per round and side (default 3,000).

import crypto from "node:crypto";
import type { KyselyPlugin, PluginTransformQueryArgs, PluginTransformResultArgs } from "kysely";
import pg from "pg";
import type { Scenario, ScenarioReport } from "../lib.ts";

/** Changes nothing: only makes a Kysely instance whose kept statements are not yet built. */
class Fresh implements KyselyPlugin {
  transformQuery(args: PluginTransformQueryArgs) {
    return args.node;
  }
  async transformResult(args: PluginTransformResultArgs) {
    return args.result;
  }
}

const rounds = 3;

export const statements: Scenario = {
  name: "statements",
  description: "hot reads' statements kept against built at every call (µs of CPU per call, in process)",

  async run(ctx): Promise<ScenarioReport> {
    const calls = Number(process.env.BENCH_STATEMENT_CALLS ?? 3000);
    const baseUrl = process.env.BENCH_DATABASE_URL || "postgres://postgres@127.0.0.1:5432/postgres";
    const dbName = `cp_bench_statements_${crypto.randomBytes(4).toString("hex")}`;
    const admin = new pg.Client({ connectionString: baseUrl });
    await admin.connect();
    await admin.query(`CREATE DATABASE ${dbName}`);
    ctx.cleanup.add("statements database", async () => {
      await admin.query(`DROP DATABASE IF EXISTS ${dbName} WITH (FORCE)`);
      await admin.end();
    });
    const url = new URL(baseUrl);
    url.pathname = `/${dbName}`;
    process.env.TEST_DATABASE_URL = url.toString();
    // Imported only now: the harness reads TEST_DATABASE_URL when it loads.
    const { startTestContext } = await import("../../packages/server/src/testing/harness.ts");
    const { insertClient } = await import("../../packages/server/src/testing/fixtures.ts");
    const { listPairsForPartner } = await import(
      "../../packages/server/src/modules/catalog/catalog-store.ts"
    );
    const { findOrder, listOrders } = await import(
      "../../packages/server/src/modules/orders/orders-store.ts"
    );
    const { credentialsColumn } = await import(
      "../../packages/server/src/modules/partners/partners-store.ts"
    );
    const test = await startTestContext();
    ctx.cleanup.add("statements context", () => test.close());
    const db = test.services.database.db;
    const partnerId = test.partner.id;
    const client = await insertClient(db, partnerId, 1);
    let orderId = 0;
    for (let n = 0; n < 30; n++) {
      const res = await test.signed({
        method: "POST",
        url: "/v1/partner/deposits",
        body: {
          partner_client_id: client.partnerClientId,
          asset_id: "AED",
          amount: "10",
          partner_order_ref: `statements-${n}`,
        },
      });
      if (res.statusCode !== 200)
        throw new Error(`statements: a deposit answered ${res.statusCode}: ${res.body}`);
      orderId = (res.json() as { result: { id: number } }).result.id;
    }
    const witness = { partnerId, column: credentialsColumn, observe() {} };
    const filter = { clientId: null, sources: [], statuses: ["completed" as const], from: null, to: null };
    type Q = typeof db;
    const paths: [string, (q: Q) => Promise<unknown>][] = [
      ["asset-pairs", (q) => listPairsForPartner(q, partnerId, witness)],
      ["one order", (q) => findOrder(q, partnerId, orderId, witness)],
      ["orders page (status=completed)", (q) => listOrders(q, partnerId, filter, 1, 20, witness)],
    ];
    const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? 0;
    const rows: {
      path: string;
      keptUs: number[];
      keptPluginUs: number[];
      builtUs: number[];
      ratio: number;
    }[] = [];
    for (const [path, read] of paths) {
      const withPlugin = db.withPlugin(new Fresh());
      const sides = {
        built: () => read(db.withPlugin(new Fresh())),
        keptPlugin: () => read(withPlugin),
        kept: () => read(db),
      };
      const answer = JSON.stringify(await sides.kept());
      for (const side of [sides.built, sides.keptPlugin]) {
        if (JSON.stringify(await side()) !== answer)
          throw new Error(`statements: ${path} answers differently`);
      }
      const us = { built: [] as number[], keptPlugin: [] as number[], kept: [] as number[] };
      for (let round = 0; round < rounds; round++) {
        for (const name of ["built", "keptPlugin", "kept"] as const) {
          for (let i = 0; i < Math.min(300, calls); i++) await sides[name]();
          const before = process.cpuUsage();
          for (let i = 0; i < calls; i++) await sides[name]();
          const used = process.cpuUsage(before);
          us[name].push((used.user + used.system) / calls);
        }
      }
      rows.push({
        path,
        keptUs: us.kept,
        keptPluginUs: us.keptPlugin,
        builtUs: us.built,
        ratio: median(us.keptPlugin) / median(us.built),
      });
    }
    // What the reference pays besides building: a Kysely instance and a plugin per call.
    let sink = 0;
    const instanceUs: number[] = [];
    for (let round = 0; round < rounds; round++) {
      const before = process.cpuUsage();
      for (let i = 0; i < calls * 10; i++) sink += db.withPlugin(new Fresh()).isTransaction ? 1 : 0;
      const used = process.cpuUsage(before);
      instanceUs.push((used.user + used.system) / (calls * 10));
    }
    const width = Math.max(...rows.map((r) => r.path.length));
    const list = (xs: number[]) => xs.map((x) => x.toFixed(0)).join(", ");
    process.stdout.write(
      `\nhot reads' statements, µs of this process's CPU per call (${calls} sequential calls per round, ${rounds} rounds alternated)\n` +
        `${"path".padEnd(width)}  kept                kept, plugin        built each call     kept ÷ built (medians, both with the plugin)\n`,
    );
    for (const r of rows) {
      process.stdout.write(
        `${r.path.padEnd(width)}  ${list(r.keptUs).padEnd(18)}  ${list(r.keptPluginUs).padEnd(18)}  ${list(r.builtUs).padEnd(18)}  ${r.ratio.toFixed(2)}\n`,
      );
    }
    if (sink !== 0) throw new Error("statements: a Kysely instance said it is a transaction");
    const instance = `a Kysely instance with a fresh plugin alone (the reference's extra per call): ${instanceUs.map((x) => x.toFixed(1)).join(", ")} µs`;
    process.stdout.write(`${instance}\n`);
    const ratios = Object.fromEntries(rows.map((r) => [`${r.path}: kept ÷ built`, r.ratio]));
    return { name: "statements", ok: true, targets: [], ratios, serverProblems: {}, notes: [instance], rows };
  },
};
