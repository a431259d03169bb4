// A deposit's facts kept and witnessed in the order's statement (migration 0022, docs/decisions.md
// "Funding facts witnessed in the order's statement") against the same deposit with its facts read
// by a statement of their own, the reference (the service's path before, and still for a client or
// an asset a process has not kept). In process, through the service's own FundingService on one
// database: the reference is the same service given kept facts that never keep anything, so both
// sides judge, post and answer alike and differ only by the facts' statement. Sequential deposits
// (no signature: the record is the same on both sides), slices alternated, on PGlite (the
// sandbox's database, in this process) and on PostgreSQL (a fresh database, one connection).
// Printed per side: this process's CPU per deposit (PGlite's PostgreSQL included, as it runs here)
// and, on PostgreSQL, the backend's, from /proc; the ratio is the kept side's total over the
// reference's.
//
// Environment (besides run.ts's): BENCH_DATABASE_URL (see deposits.ts); BENCH_ROUNDS (default 4);
// BENCH_FACTS_DEPOSITS deposits per slice on PostgreSQL (default 2,000; PGlite a quarter of it).

import { sql } from "kysely";
import { type DatabaseHandle, openDatabase } from "../../packages/server/src/db/database.ts";
import { FundingService } from "../../packages/server/src/modules/funding/funding-service.ts";
import type { HeldFacts } from "../../packages/server/src/modules/funding/funding-store.ts";
import { KeptFundingFacts } from "../../packages/server/src/modules/funding/kept-facts.ts";
import { checkLedger } from "../../packages/server/src/modules/ledger/ledger-store.ts";
import { seedBenchPartner } from "../bench-seed.ts";
import {
  clockTicksPerSecond,
  cpuTicks,
  median,
  printTable,
  type Scenario,
  type ScenarioReport,
} from "../lib.ts";
import { freshBenchDatabase, intFromEnv } from "../proc.ts";

const clientCount = 16;

/** Keeps nothing: every request has its facts read, as before migration 0022. */
class NothingKept extends KeptFundingFacts {
  override get(): HeldFacts | undefined {
    return undefined;
  }
}

interface Side {
  name: "kept" | "read";
  service: FundingService;
  processUs: number[];
  backendUs: number[];
}

export const fundingFacts: Scenario = {
  name: "funding-facts",
  description:
    "a deposit's facts kept and witnessed in the order's statement against read by a statement of their own (CPU per deposit, in process, PGlite and PostgreSQL)",

  async run(ctx): Promise<ScenarioReport> {
    const rounds = intFromEnv("BENCH_ROUNDS", 4, 1, 20);
    const pgDeposits = intFromEnv("BENCH_FACTS_DEPOSITS", 2_000, 10, 1_000_000);
    const hz = clockTicksPerSecond();
    const rows: string[][] = [];
    const ratios: Record<string, number> = {};
    const report: Record<string, unknown> = {};
    let ok = true;

    for (const backend of ["PGlite", "PostgreSQL"] as const) {
      let database: DatabaseHandle;
      if (backend === "PGlite") {
        database = await openDatabase({ databaseUrl: null, pgliteDir: null });
      } else {
        const { databaseUrl } = await freshBenchDatabase(ctx.cleanup);
        database = await openDatabase({ databaseUrl, pgliteDir: null, poolSize: 1 });
      }
      ctx.cleanup.add(`close the ${backend} database`, () => database.close());
      const db = database.db;
      const { partnerId } = await seedBenchPartner(database, clientCount);
      // The one connection's backend (PostgreSQL), whose CPU is read from /proc.
      const backendPid =
        backend === "PostgreSQL"
          ? (await sql<{ pid: number }>`SELECT pg_backend_pid() AS pid`.execute(db)).rows[0]!.pid
          : null;

      const sides: Side[] = [
        { name: "kept", service: new FundingService(db), processUs: [], backendUs: [] },
        { name: "read", service: new FundingService(db, new NothingKept()), processUs: [], backendUs: [] },
      ];
      const deposits = backend === "PGlite" ? Math.max(10, Math.floor(pgDeposits / 4)) : pgDeposits;
      let refs = 0;
      const slice = async (side: Side, n: number) => {
        for (let i = 0; i < n; i++) {
          refs += 1;
          const r = await side.service.deposit(partnerId, {
            partnerClientId: `client-${1 + (refs % clientCount)}`,
            assetId: "AED",
            amount: 100_000_000n,
            partnerOrderRef: `facts-${refs}`,
          });
          if (!r.ok) throw new Error(`funding-facts: a deposit (${side.name}) answered ${r.error}`);
        }
      };
      process.stdout.write(`bench: ${backend}, ${rounds} rounds of ${deposits} deposits per side\n`);
      for (const side of sides) await slice(side, Math.ceil(deposits / 4)); // plans, caches, JIT
      for (let round = 0; round < rounds; round++) {
        // Kept first in even rounds, read first in odd ones: the host's drift falls on both.
        const order = round % 2 === 0 ? sides : [...sides].reverse();
        for (const side of order) {
          const ticks = backendPid === null ? 0 : cpuTicks(backendPid);
          const before = process.cpuUsage();
          await slice(side, deposits);
          const used = process.cpuUsage(before);
          side.processUs.push((used.user + used.system) / deposits);
          if (backendPid !== null)
            side.backendUs.push(((cpuTicks(backendPid) - ticks) / hz / deposits) * 1e6);
        }
      }
      const problems = await checkLedger(db);
      if (problems.length > 0) {
        ok = false;
        process.stdout.write(`bench: ${backend}: the ledger check found ${problems.length} problems\n`);
      }
      const total = (s: Side) => median(s.processUs) + (backendPid === null ? 0 : median(s.backendUs));
      const [kept, read] = sides as [Side, Side];
      const list = (xs: number[]) => xs.map((x) => x.toFixed(0)).join(", ");
      for (const s of sides) {
        rows.push([
          `${backend}, facts ${s.name === "kept" ? "kept, witnessed in the order's statement" : "read by a statement of their own (reference)"}`,
          list(s.processUs),
          backendPid === null ? "-" : list(s.backendUs),
          total(s).toFixed(0),
        ]);
      }
      ratios[`${backend}: kept ÷ read, CPU per deposit`] = total(kept) / total(read);
      report[backend] = {
        deposits_per_slice: deposits,
        kept: { process_us: kept.processUs, backend_us: kept.backendUs },
        read: { process_us: read.processUs, backend_us: read.backendUs },
      };
    }
    printTable(
      "a deposit's facts kept against read (µs of CPU per deposit, sequential, in process; by round)",
      ["side", "this process (PGlite's PostgreSQL in it)", "PostgreSQL backend", "total (medians)"],
      rows,
    );
    for (const [k, v] of Object.entries(ratios)) process.stdout.write(`${k}: ${v.toFixed(2)}\n`);
    return { name: "funding-facts", ok, targets: [], ratios, serverProblems: {}, notes: [], ...report };
  },
};
