// Command definitions. Exit codes: 0 success, 2 bad input (one clear line on stderr), 1 any other
// failure.

import { ConfigError, closeOnSignals, FolderLockedError, runServer } from "@counterpart/server";
import { Command, CommanderError } from "commander";

export class UsageError extends Error {}

export async function run(argv: string[]): Promise<number> {
  const program = new Command("counterpart").description(
    "Counterpart brokerage: operator and partner commands",
  );
  program.exitOverride();
  program.configureOutput({ writeErr: (s) => process.stderr.write(s) });

  program
    .command("serve")
    .description("start the service (configuration from environment variables)")
    .action(async () => {
      const server = await runServer(process.env);
      closeOnSignals(server);
      await new Promise<never>(() => {});
    });

  try {
    await program.parseAsync(argv, { from: "user" });
    return 0;
  } catch (err) {
    if (err instanceof CommanderError) return err.exitCode === 0 ? 0 : 2;
    if (err instanceof ConfigError) {
      for (const p of err.problems) process.stderr.write(`counterpart: ${p}\n`);
      return 2;
    }
    if (err instanceof UsageError || err instanceof FolderLockedError) {
      process.stderr.write(`counterpart: ${err.message}\n`);
      return 2;
    }
    process.stderr.write(`counterpart: ${err instanceof Error ? err.message : String(err)}\n`);
    return 1;
  }
}
