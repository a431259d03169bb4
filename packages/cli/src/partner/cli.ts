// The partner CLI, the `counterpart` command of the published @counterpart/cli package: the
// partner's commands only (keygen, client, document, deposit, withdraw, balance, quote, execute,
// order, call), over the SDK. It never loads the server; the operator's commands (serve, migrate,
// partner, asset, pair, ledger ...) are in operator/cli.ts and run from the repository.

import type { Command } from "commander";
import { registerKeygenCommand } from "../common/keygen-command.ts";
import type { Env } from "../common/local-files.ts";
import { baseProgram, runProgram } from "../common/program.ts";
import { cliVersion } from "../common/version.ts";
import { registerCallCommand } from "./call-command.ts";
import { registerPartnerClientCommands } from "./client-commands.ts";
import { registerEventsCommands } from "./events-commands.ts";
import { registerTradingCommands } from "./trading-commands.ts";

export function buildPartnerProgram(env: Env, setExit: (code: 0 | 1 | 2) => void): Command {
  const program = baseProgram(
    "Counterpart partner commands: clients, documents, funding, trading and orders over the signed partner API",
  ).version(cliVersion);
  // Created first so that the partner commands join it with a description that has no operator side.
  program.command("client").description("your clients: onboarding, reads, updates and activation");
  registerKeygenCommand(program, "send to the operator");
  registerPartnerClientCommands(program, env);
  registerTradingCommands(program, env);
  registerEventsCommands(program, env);
  registerCallCommand(program, env, setExit);
  return program;
}

export function runPartner(argv: string[], env: Env = process.env): Promise<number> {
  return runProgram(argv, (setExit) => buildPartnerProgram(env, setExit));
}
