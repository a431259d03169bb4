// `counterpart ledger check`: recomputes every account's balance from its postings (through the
// admin API) and reports the differences: exit 0 and "ledger: clean", or exit 1 with one line per
// difference on stdout (the JSON report with --json) and a one-line summary on stderr.

import type { Command } from "commander";
import type { Env } from "../common/local-files.ts";
import { emit, type OutputOptions } from "../common/output.ts";
import { withGlobalOptions } from "../common/program.ts";
import { AdminClient, type AdminFlags, adminOptions, resolveAdminTarget } from "./admin-client.ts";
import { formatLedgerDifferences } from "./admin-output.ts";

/** Registers `ledger`; `setExit` receives 1 when the ledger is not clean. */
export function registerLedgerCommands(program: Command, env: Env, setExit: (code: 0 | 1) => void): void {
  const ledger = program.command("ledger").description("the double-entry ledger (through the admin API)");

  adminOptions(
    ledger.command("check").description("recompute balances from postings; exit 1 if anything differs"),
  ).action(
    withGlobalOptions(async (options: AdminFlags & OutputOptions) => {
      const report = await new AdminClient(resolveAdminTarget(options, env)).checkLedger();
      const clean = report.ok && report.differences.length === 0;
      emit(options, { ok: clean, differences: report.differences }, () =>
        clean ? "ledger: clean" : formatLedgerDifferences(report.differences),
      );
      if (!clean) {
        const n = report.differences.length;
        process.stderr.write(`counterpart: the ledger check found ${n} difference${n === 1 ? "" : "s"}\n`);
        setExit(1);
      }
    }),
  );
}
