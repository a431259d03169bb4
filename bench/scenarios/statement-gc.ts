// What one statement leaves to the garbage collector, in a process with an API worker's V8 options
// and its young generation at the size a worker's reaches under load (docs/decisions.md, "A
// statement's answer through pg's callback form"): the service's handle
// sending a marked read (Kysely, db/database.ts), against the same read through pg's promise form
// on a checked-out client and through pg's callback form (pool.query), each side in a process of its
// own (bench/statement-gc-child.ts), 16 loops at once, rounds alternated. Per statement: the bytes
// allocated and promoted to the old generation in the young generation's collections, the time
// V8's collections paused the process, and statements per second, from V8's --trace-gc-nvp.
//
// Environment (besides run.ts's): BENCH_DATABASE_URL (see deposits.ts), BENCH_ROUNDS (default 2).

import { spawn } from "node:child_process";
import path from "node:path";
import readline from "node:readline";
import { limits } from "../../packages/server/src/config/limits.ts";
import { fixed, printTable, repoRoot, type Scenario, type ScenarioReport } from "../lib.ts";
import { freshBenchDatabase, intFromEnv } from "../proc.ts";

const sides = ["service", "pg promise", "pg callback"] as const;
type SideName = (typeof sides)[number];

interface Tally {
  sent: number;
  wallMs: number;
  scavenges: number;
  allocated: number;
  promoted: number;
  pauseMs: number;
  fullPauseMs: number;
}

async function measure(side: SideName, databaseUrl: string, seconds: number): Promise<Tally> {
  const child = spawn(
    process.execPath,
    [
      // A worker's young generation as it is under load, grown to its bound: V8 starts it small
      // and grows it as survivors come, and a short run of one statement's loop may never grow it.
      `--min-semi-space-size=${limits.workerSemiSpaceMib}`,
      `--max-semi-space-size=${limits.workerSemiSpaceMib}`,
      `--heap-growing-percent=${limits.workerHeapGrowingPercent}`,
      path.join("bench", "statement-gc-child.ts"),
      side,
      databaseUrl,
      String(seconds),
    ],
    { cwd: repoRoot, stdio: ["ignore", "pipe", "inherit"] },
  );
  const tally: Tally = {
    sent: 0,
    wallMs: 0,
    scavenges: 0,
    allocated: 0,
    promoted: 0,
    pauseMs: 0,
    fullPauseMs: 0,
  };
  let measuring = false;
  let done = false;
  for await (const line of readline.createInterface({ input: child.stdout })) {
    if (line === "statement-gc: measured") {
      measuring = true;
      continue;
    }
    if (line.startsWith("{")) {
      const end = JSON.parse(line) as { sent: number; wallMs: number };
      tally.sent = end.sent;
      tally.wallMs = end.wallMs;
      done = true;
      continue;
    }
    if (!measuring || done) continue;
    const field = (name: string) => Number(new RegExp(`\\b${name}=([0-9.]+)`).exec(line)?.[1] ?? Number.NaN);
    const kind = /\bgc=(\w+)/.exec(line)?.[1];
    if (kind === undefined) continue;
    if (kind === "s") {
      tally.scavenges++;
      tally.allocated += field("allocated");
      tally.promoted += field("promoted");
      tally.pauseMs += field("pause");
    } else {
      tally.fullPauseMs += field("pause");
    }
  }
  const code = await new Promise<number | null>((resolve) => {
    if (child.exitCode !== null) resolve(child.exitCode);
    else child.once("exit", resolve);
  });
  if (code !== 0 || !done) throw new Error(`statement-gc: the ${side} side exited with ${code}`);
  return tally;
}

export const statementGc: Scenario = {
  name: "statement-gc",
  description:
    "what one statement leaves to the garbage collector: the service's handle against pg's two forms",

  async run(ctx): Promise<ScenarioReport> {
    const rounds = intFromEnv("BENCH_ROUNDS", 2, 1, 20);
    const seconds = Math.max(2, Math.round(ctx.durationS / 2));
    const { databaseUrl } = await freshBenchDatabase(ctx.cleanup);
    const totals = new Map<SideName, Tally[]>(sides.map((s) => [s, []]));
    for (let r = 0; r < rounds; r++) {
      const order = r % 2 === 0 ? [...sides] : [...sides].reverse();
      for (const side of order) {
        process.stdout.write(`bench: statement-gc: ${side}, round ${r + 1} of ${rounds}, ${seconds} s\n`);
        totals.get(side)!.push(await measure(side, databaseUrl, seconds));
      }
    }
    const perStatement = (side: SideName) => {
      const t = totals.get(side)!;
      const sum = (f: (x: Tally) => number) => t.reduce((a, x) => a + f(x), 0);
      const sent = sum((x) => x.sent);
      return {
        side,
        statements_per_s: (sent * 1000) / sum((x) => x.wallMs),
        allocated_bytes: sum((x) => x.allocated) / sent,
        promoted_bytes: sum((x) => x.promoted) / sent,
        young_pause_us: (sum((x) => x.pauseMs) * 1000) / sent,
        full_pause_us: (sum((x) => x.fullPauseMs) * 1000) / sent,
        scavenges: sum((x) => x.scavenges),
      };
    };
    const rows = sides.map(perStatement);
    printTable(
      `what one statement leaves to the garbage collector (16 loops, ${rounds} × ${seconds} s per side, a worker's V8 options, its young generation at its bound)`,
      ["side", "statements/s", "allocated B", "promoted B", "young GC µs", "full GC µs", "scavenges"],
      rows.map((r) => [
        r.side,
        fixed(r.statements_per_s, 0),
        fixed(r.allocated_bytes, 0),
        fixed(r.promoted_bytes, 0),
        fixed(r.young_pause_us, 2),
        fixed(r.full_pause_us, 2),
        String(r.scavenges),
      ]),
    );
    const service = rows[0]!;
    const ratios = Object.fromEntries(
      rows
        .slice(1)
        .map((r) => [
          `promoted bytes per statement: service ÷ ${r.side}`,
          service.promoted_bytes / Math.max(r.promoted_bytes, 1),
        ]),
    );
    return {
      name: "statement-gc",
      ok: rows.every((r) => r.statements_per_s > 0),
      targets: [],
      ratios,
      serverProblems: {},
      notes: [],
      rows,
    };
  },
};
