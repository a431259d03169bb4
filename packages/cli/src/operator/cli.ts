// The operator's command line (src/main.ts): the operator's commands (serve, partner, client
// set-status, asset, pair, ..., in this folder) and the partner's (client create ..., document,
// deposit, withdraw, balance, quote, execute, order, in partner/).
// Exit codes: 0 success, 2 bad input (one clear line on stderr), 1 any other failure. With --json
// every command prints exactly one JSON object on stdout, failures included ({"error": {...}}),
// except `events tail`, which prints one JSON line per event; the stderr line is written either
// way. Nothing prints a stack trace.

import type { Command } from "commander";
import type { Env } from "../common/local-files.ts";
import { baseProgram, runProgram } from "../common/program.ts";
import { registerCallCommand } from "../partner/call-command.ts";
import { registerPartnerClientCommands } from "../partner/client-commands.ts";
import { registerEventsCommands } from "../partner/events-commands.ts";
import { registerTradingCommands } from "../partner/trading-commands.ts";
import { registerAuditCommands } from "./audit-commands.ts";
import { registerCatalogCommands } from "./catalog-commands.ts";
import { registerClientCommands } from "./client-admin-commands.ts";
import { registerLedgerCommands } from "./ledger-commands.ts";
import { registerLocalCommands } from "./local-commands.ts";
import { registerOperatorCommands } from "./operator-commands.ts";
import { registerPartnerCommands } from "./partner-admin-commands.ts";
import { registerWebhookCommands } from "./webhook-commands.ts";

export { CliError, FailureError, UsageError } from "../common/errors.ts";

export function buildProgram(env: Env, setExit: (code: 0 | 1 | 2) => void): Command {
  const program = baseProgram("Counterpart brokerage: operator and partner commands");
  registerLocalCommands(program, env);
  registerPartnerCommands(program, env);
  registerPartnerClientCommands(program, env);
  registerClientCommands(program, env);
  registerTradingCommands(program, env);
  registerEventsCommands(program, env);
  registerWebhookCommands(program, env);
  registerCatalogCommands(program, env);
  registerLedgerCommands(program, env, setExit);
  registerOperatorCommands(program, env);
  registerAuditCommands(program, env);
  registerCallCommand(program, env, setExit);
  return program;
}

export function run(argv: string[], env: Env = process.env): Promise<number> {
  return runProgram(argv, (setExit) => buildProgram(env, setExit));
}
