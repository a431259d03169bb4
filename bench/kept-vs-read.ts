// What a process keeps between requests, measured against reading it again: one service path run
// with what it keeps (kept facts witnessed in the order's statement) and the same service told to
// keep nothing (every request reads its facts by a statement of its own, the reference). In
// process, through the service's own classes on one database, so both sides judge, write and
// answer alike and differ only by what is kept. Sequential operations (no signature: the record is
// the same on both sides), slices alternated, on PGlite (the sandbox's database, in this process)
// and on PostgreSQL (a fresh database, one connection). Per side: this process's CPU per operation
// (PGlite's PostgreSQL included, as it runs here) and, on PostgreSQL, the backend's, from /proc; the
// ratio is the kept side's total over the reference's. Also the wall-clock time per operation (the
// latency of one sequential operation, round trips included), by the median of the rounds. With
// BENCH_DB_DELAY_MS=N, PostgreSQL is reached through a link that holds every chunk N ms each way
// (bench/delayed-link.ts, in this process, so its CPU counts in this process's): what a round trip
// costs when the database is across a network, read from the wall time; PGlite is not run then. Used by funding-facts, quote-kept and
// execute-kept.

import { sql } from "kysely";
import { type DatabaseHandle, openDatabase } from "../packages/server/src/db/database.ts";
import { checkLedger } from "../packages/server/src/modules/ledger/ledger-store.ts";
import { seedBenchPartner } from "./bench-seed.ts";
import { delayedLink } from "./delayed-link.ts";
import {
  clockTicksPerSecond,
  cpuTicks,
  median,
  printTable,
  type ScenarioContext,
  type ScenarioReport,
} from "./lib.ts";
import { freshBenchDatabase, intFromEnv } from "./proc.ts";

/** The two sides on one seeded database: each runs `n` operations one after the other. */
export interface KeptVsReadSides {
  kept: (n: number) => Promise<void>;
  read: (n: number) => Promise<void>;
}

export interface KeptVsRead {
  name: string;
  /** One operation, as the table says it ("deposit", "quote → execute pair"). */
  op: string;
  /** What is kept, as the table's rows say it ("facts", "quote"). */
  what: string;
  /** Operations per slice on PostgreSQL: the variable and its default (PGlite runs a quarter). */
  opsEnv: string;
  opsDefault: number;
  /** Verified clients of the bench's partner. */
  clients: number;
  /** The two sides on `database`, seeded with the bench's partner. */
  sides(database: DatabaseHandle, partnerId: string): Promise<KeptVsReadSides>;
}

interface Measured {
  name: "kept" | "read";
  run: (n: number) => Promise<void>;
  processUs: number[];
  backendUs: number[];
  /** Wall-clock time per operation: the latency of one sequential operation. */
  wallUs: number[];
}

export async function runKeptVsRead(ctx: ScenarioContext, spec: KeptVsRead): Promise<ScenarioReport> {
  const rounds = intFromEnv("BENCH_ROUNDS", 4, 1, 20);
  const pgOps = intFromEnv(spec.opsEnv, spec.opsDefault, 10, 1_000_000);
  const delayMs = intFromEnv("BENCH_DB_DELAY_MS", 0, 0, 100);
  const hz = clockTicksPerSecond();
  const rows: string[][] = [];
  const ratios: Record<string, number> = {};
  const report: Record<string, unknown> = {};
  let ok = true;

  const backends = delayMs > 0 ? (["PostgreSQL"] as const) : (["PGlite", "PostgreSQL"] as const);
  for (const backend of backends) {
    let database: DatabaseHandle;
    if (backend === "PGlite") {
      database = await openDatabase({ databaseUrl: null, pgliteDir: null });
    } else {
      const { databaseUrl } = await freshBenchDatabase(ctx.cleanup);
      const url = new URL(databaseUrl);
      if (delayMs > 0) {
        const link = await delayedLink({ host: url.hostname, port: Number(url.port || 5432) }, delayMs);
        ctx.cleanup.add("close the delayed link", () => link.close());
        url.host = `127.0.0.1:${link.port}`;
        process.stdout.write(
          `bench: PostgreSQL through a link that holds each chunk ${delayMs} ms each way\n`,
        );
      }
      database = await openDatabase({ databaseUrl: url.toString(), pgliteDir: null, poolSize: 1 });
    }
    ctx.cleanup.add(`close the ${backend} database`, () => database.close());
    const db = database.db;
    const { partnerId } = await seedBenchPartner(database, spec.clients);
    // The one connection's backend (PostgreSQL), whose CPU is read from /proc.
    const backendPid =
      backend === "PostgreSQL"
        ? (await sql<{ pid: number }>`SELECT pg_backend_pid() AS pid`.execute(db)).rows[0]!.pid
        : null;

    const given = await spec.sides(database, partnerId);
    const sides: Measured[] = [
      { name: "kept", run: given.kept, processUs: [], backendUs: [], wallUs: [] },
      { name: "read", run: given.read, processUs: [], backendUs: [], wallUs: [] },
    ];
    const ops = backend === "PGlite" ? Math.max(10, Math.floor(pgOps / 4)) : pgOps;
    process.stdout.write(`bench: ${backend}, ${rounds} rounds of ${ops} per side (${spec.op})\n`);
    for (const side of sides) await side.run(Math.ceil(ops / 4)); // plans, caches, JIT
    for (let round = 0; round < rounds; round++) {
      // Kept first in even rounds, read first in odd ones: the host's drift falls on both.
      const order = round % 2 === 0 ? sides : [...sides].reverse();
      for (const side of order) {
        const ticks = backendPid === null ? 0 : cpuTicks(backendPid);
        const before = process.cpuUsage();
        const started = process.hrtime.bigint();
        await side.run(ops);
        const used = process.cpuUsage(before);
        side.wallUs.push(Number(process.hrtime.bigint() - started) / 1e3 / ops);
        side.processUs.push((used.user + used.system) / ops);
        if (backendPid !== null) side.backendUs.push(((cpuTicks(backendPid) - ticks) / hz / ops) * 1e6);
      }
    }
    const problems = await checkLedger(db);
    if (problems.length > 0) {
      ok = false;
      process.stdout.write(`bench: ${backend}: the ledger check found ${problems.length} problems\n`);
    }
    const total = (s: Measured) => median(s.processUs) + (backendPid === null ? 0 : median(s.backendUs));
    const [kept, read] = sides as [Measured, Measured];
    const list = (xs: number[]) => xs.map((x) => x.toFixed(0)).join(", ");
    for (const s of sides) {
      rows.push([
        `${backend}, ${spec.what} ${s.name === "kept" ? "kept, checked by the writing statement" : "read by a statement of its own (reference)"}`,
        list(s.processUs),
        backendPid === null ? "-" : list(s.backendUs),
        total(s).toFixed(0),
        median(s.wallUs).toFixed(0),
      ]);
    }
    ratios[`${backend}: kept ÷ read, CPU per ${spec.op}`] = total(kept) / total(read);
    ratios[`${backend}: kept ÷ read, wall time per ${spec.op}`] = median(kept.wallUs) / median(read.wallUs);
    report[backend] = {
      per_slice: ops,
      kept: { process_us: kept.processUs, backend_us: kept.backendUs, wall_us: kept.wallUs },
      read: { process_us: read.processUs, backend_us: read.backendUs, wall_us: read.wallUs },
    };
  }
  printTable(
    `${spec.what} kept against read (µs of CPU per ${spec.op}, sequential, in process; by round)`,
    [
      "side",
      "this process (PGlite's PostgreSQL in it)",
      "PostgreSQL backend",
      "total (medians)",
      "wall time (median)",
    ],
    rows,
  );
  for (const [k, v] of Object.entries(ratios)) process.stdout.write(`${k}: ${v.toFixed(2)}\n`);
  return { name: spec.name, ok, targets: [], ratios, serverProblems: {}, notes: [], ...report };
}
