// The strict amount parser on hostile input (docs/decisions.md "Wire": absurd exponents are refused, in under
// 50 ms): time per call of parseAmount for each input, in-process, best of several rounds.

import { parseAmount } from "@counterpart/protocol";
import type { Scenario, ScenarioReport } from "../lib.ts";

const inputs: [string, string][] = [
  ["plain 100.50", "100.50"],
  ["scientific 1.5e2", "1.5e2"],
  ["exponent at the bound 1e30", "1e30"],
  ["exponent past the bound 1e31", "1e31"],
  ["absurd exponent 1e999999999", "1e999999999"],
  ["40 significant digits", "1234567890123456789012345678901234567890"],
  ["41 significant digits", "12345678901234567890123456789012345678901"],
  ["1 MB of digits", "9".repeat(1_000_000)],
  ["1 MB exponent 1e000…5", `1e${"0".repeat(1_000_000)}5`],
  ["1 MB fraction with junk", `1.${"1".repeat(1_000_000)}x`],
];

export const parse: Scenario = {
  name: "parse",
  description: "parseAmount on hostile inputs (µs per call)",

  async run(): Promise<ScenarioReport> {
    const rows: { input: string; verdict: string; microsPerCall: number }[] = [];
    for (const [label, value] of inputs) {
      const calls = value.length > 1000 ? 20 : 20_000;
      let best = Number.POSITIVE_INFINITY;
      let verdict = "";
      for (let round = 0; round < 5; round++) {
        const started = process.hrtime.bigint();
        for (let i = 0; i < calls; i++) {
          const r = parseAmount(value);
          if (i === 0) verdict = r.ok ? "accepted" : r.type;
        }
        best = Math.min(best, Number(process.hrtime.bigint() - started) / 1000 / calls);
      }
      rows.push({ input: label, verdict, microsPerCall: best });
    }
    const width = Math.max(...rows.map((r) => r.input.length));
    process.stdout.write(
      `\nparseAmount (best of 5 rounds)\n${"input".padEnd(width)}  ${"verdict".padEnd(20)}  µs/call\n`,
    );
    for (const r of rows) {
      process.stdout.write(
        `${r.input.padEnd(width)}  ${r.verdict.padEnd(20)}  ${r.microsPerCall.toFixed(2)}\n`,
      );
    }
    const worst = Math.max(...rows.map((r) => r.microsPerCall));
    const notes = [`slowest input: ${worst.toFixed(1)} µs per call (bound: 50 ms = 50,000 µs)`];
    process.stdout.write(`${notes[0]}\n`);
    return { name: "parse", ok: worst < 50_000, targets: [], ratios: {}, serverProblems: {}, notes, rows };
  },
};
