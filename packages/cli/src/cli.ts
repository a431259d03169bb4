// Command definitions: the operator's (serve, partner, client set-status, asset, pair, ...) and the
// partner's (client create ..., document, deposit, withdraw, balance, quote, execute, order).
// Exit codes: 0 success, 2 bad input (one clear line on stderr), 1 any other failure. With --json
// every command prints exactly one JSON object on stdout, failures included ({"error": {...}});
// the stderr line is written either way. Nothing prints a stack trace.

import { Command, CommanderError } from "commander";
import { registerCallCommand } from "./call-command.ts";
import { registerCatalogCommands } from "./catalog-commands.ts";
import { registerClientCommands } from "./client-commands.ts";
import { CliError } from "./errors.ts";
import { registerLedgerCommands } from "./ledger-commands.ts";
import { registerLocalCommands } from "./local-commands.ts";
import type { Env } from "./local-files.ts";
import { printJson } from "./output.ts";
import { registerPartnerClientCommands } from "./partner-client-commands.ts";
import { registerPartnerCommands } from "./partner-commands.ts";
import { registerTradingCommands } from "./trading-commands.ts";

export { CliError, FailureError, UsageError } from "./errors.ts";

/** Commander's messages ("error: ...", sometimes a second "(Did you mean ...?)" line) as one line. */
function oneLine(message: string): string {
  return message
    .trim()
    .replace(/^error: /, "")
    .replace(/\s*\n\s*/g, " ");
}

function wantsJson(argv: readonly string[]): boolean {
  const end = argv.indexOf("--");
  return (end === -1 ? argv : argv.slice(0, end)).includes("--json");
}

export function buildProgram(env: Env, setExit: (code: 0 | 1) => void): Command {
  const program = new Command("counterpart").description(
    "Counterpart brokerage: operator and partner commands",
  );
  // Set before any subcommand is added: subcommands copy these settings.
  program.exitOverride();
  program.configureOutput({
    writeOut: (s) => process.stdout.write(s),
    writeErr: (s) => process.stderr.write(s),
    outputError: () => {
      // Reported by run() as one "counterpart: ..." line.
    },
  });
  registerLocalCommands(program, env);
  registerPartnerCommands(program, env);
  registerPartnerClientCommands(program, env);
  registerClientCommands(program, env);
  registerTradingCommands(program, env);
  registerCatalogCommands(program, env);
  registerLedgerCommands(program, env, setExit);
  registerCallCommand(program, env, setExit);
  return program;
}

export async function run(argv: string[], env: Env = process.env): Promise<number> {
  let exitCode = 0;
  const program = buildProgram(env, (code) => {
    exitCode = code;
  });
  try {
    await program.parseAsync(argv, { from: "user" });
    return exitCode;
  } catch (err) {
    let code: 1 | 2;
    let lines: readonly string[];
    let details: Readonly<Record<string, unknown>> = {};
    if (err instanceof CommanderError) {
      // --help and --version end here with exit code 0; a shown help after a bad call is not 0.
      if (err.exitCode === 0) return 0;
      if (err.code === "commander.help" || err.code === "commander.helpDisplayed") return 2;
      code = 2;
      lines = [oneLine(err.message)];
    } else if (err instanceof CliError) {
      code = err.exitCode;
      lines = err.lines;
      details = err.details;
    } else {
      code = 1;
      lines = [oneLine(err instanceof Error ? err.message : String(err)) || "unexpected failure"];
    }
    for (const line of lines) process.stderr.write(`counterpart: ${line}\n`);
    if (wantsJson(argv)) printJson({ error: { exit_code: code, message: lines.join("\n"), ...details } });
    return code;
  }
}
