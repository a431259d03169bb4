// One side of the statement-gc scenario (bench/scenarios/statement-gc.ts), in a process of its own
// started with an API worker's V8 options (its young generation at its bound): the same read sent
// by 16 loops at once for a few seconds, after a 2 s warm-up, with V8's --trace-gc-nvp on for the
// measured seconds alone, then one line of JSON with the statements sent. The parent reads the
// collections from this process's standard output.
//
// Usage: node <worker's V8 options> bench/statement-gc-child.ts <side> <database URL> <seconds>
//   side: "service" (the service's handle: Kysely and db/database.ts, a marked statement, as a hot
//         read sends it), "pg promise" (pg's promise form on a client checked out of the pool, as
//         most code does), "pg callback" (pg's callback form, through pool.query)

import v8 from "node:v8";
import { CompiledQuery } from "kysely";
import pg from "pg";
import { openDatabase, preparedMarker } from "../packages/server/src/db/database.ts";

const [side, databaseUrl, secondsText] = process.argv.slice(2);
if (side === undefined || databaseUrl === undefined || secondsText === undefined) {
  process.stderr.write("usage: statement-gc-child.ts <side> <database URL> <seconds>\n");
  process.exit(2);
}
const seconds = Number(secondsText);
/** Twelve rows of the asset pairs' shape: what a catalog read answers. */
const text = `SELECT g::text AS id, 'BTC' AS base_id, 'USD' AS quote_id,
  (g * 1.5)::numeric(38, 8)::text AS buy, (g * 1.4)::numeric(38, 8)::text AS sell, true AS tradable
  FROM generate_series(1, $1::int) g`;
const loops = 16;

let send: () => Promise<unknown>;
let close: () => Promise<void>;
if (side === "service") {
  const handle = await openDatabase({ databaseUrl, pgliteDir: null, poolSize: 10 });
  const query = CompiledQuery.raw(`${preparedMarker}\n${text}`, [12]);
  send = () => handle.db.executeQuery(query);
  close = () => handle.close();
} else if (side === "pg promise" || side === "pg callback") {
  const pool = new pg.Pool({ connectionString: databaseUrl, max: 10 });
  send =
    side === "pg callback"
      ? () => pool.query(text, [12])
      : async () => {
          const client = await pool.connect();
          try {
            return await client.query(text, [12]);
          } finally {
            client.release();
          }
        };
  close = () => pool.end();
} else {
  throw new Error(`unknown side ${side}`);
}

let sent = 0;
const loop = async (until: number) => {
  while (performance.now() < until) {
    await send();
    sent++;
  }
};
const run = (s: number) => {
  const until = performance.now() + s * 1000;
  return Promise.all(Array.from({ length: loops }, () => loop(until)));
};
await run(2);
sent = 0;
process.stdout.write("statement-gc: measured\n");
v8.setFlagsFromString("--trace-gc-nvp");
const started = performance.now();
await run(seconds);
const wallMs = performance.now() - started;
v8.setFlagsFromString("--no-trace-gc-nvp");
process.stdout.write(`${JSON.stringify({ sent, wallMs })}\n`);
await close();
