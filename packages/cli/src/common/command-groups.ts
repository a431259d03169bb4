// Command groups that several modules add subcommands to: `client` holds the partner's own client
// commands (partner API, partner/client-commands.ts) and the operator's compliance actions (admin
// API, operator/client-admin-commands.ts). Whichever module registers first creates the group; the other joins it.

import type { Command } from "commander";

export const clientGroupDescription =
  "clients: a partner's onboarding and reads (partner API), compliance actions (admin API)";

/** The subcommand `name` of `program`, created with `description` if it does not exist yet. */
export function commandGroup(program: Command, name: string, description: string): Command {
  return program.commands.find((c) => c.name() === name) ?? program.command(name).description(description);
}
