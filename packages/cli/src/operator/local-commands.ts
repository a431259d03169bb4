// The commands that act locally: serve, migrate (on the store the environment configures) and
// keygen (common/keygen-command.ts, which the partner CLI has too). The server package is loaded only by
// the commands that need it, so the other commands start quickly.

import type { Command } from "commander";
import { UsageError } from "../common/errors.ts";
import { registerKeygenCommand } from "../common/keygen-command.ts";
import type { Env } from "../common/local-files.ts";
import { emit, type OutputOptions, printJson } from "../common/output.ts";
import { withGlobalOptions } from "../common/program.ts";

type ServerModule = typeof import("@counterpart/server");

/** Configuration problems and a data folder in use are bad input (exit 2). */
function translate(server: ServerModule, err: unknown): unknown {
  if (err instanceof server.ConfigError) return new UsageError(err.problems);
  if (err instanceof server.FolderLockedError) return new UsageError(err.message);
  return err;
}

/**
 * PGlite leaves an Emscripten timer armed after close() that holds the process open for seconds
 * or longer. Once the command has finished (src/main.ts has set process.exitCode by the time this
 * fires), nothing else is worth waiting for.
 */
function exitWhenDone(): void {
  setTimeout(() => process.exit(), 0).unref();
}

export function registerLocalCommands(program: Command, env: Env): void {
  program
    .command("serve")
    .description(
      "start the service (configuration from environment variables); --json prints the listening addresses instead of the banner",
    )
    .action(
      withGlobalOptions(async (options: OutputOptions) => {
        const server = await import("@counterpart/server");
        let running: Awaited<ReturnType<ServerModule["runServer"]>>;
        // With --json the start-up banner (written by runServer through process.stdout.write) is
        // replaced by one JSON object; pino logs go to fd 1 directly and are not affected.
        const write = process.stdout.write;
        if (options.json) process.stdout.write = (() => true) as typeof process.stdout.write;
        try {
          const starting = server.runServer(env);
          server.closeOnSignals(starting);
          running = await starting;
        } catch (err) {
          throw translate(server, err);
        } finally {
          process.stdout.write = write;
        }
        if (options.json) {
          printJson({ status: "listening", partner_url: running.partnerUrl, admin_url: running.adminUrl });
        }
        await new Promise<never>(() => {});
      }),
    );

  program
    .command("migrate")
    .description("apply pending database migrations (DATABASE_URL, else the PGlite data under DATA_DIR)")
    .action(
      withGlobalOptions(async (options: OutputOptions) => {
        const server = await import("@counterpart/server");
        let applied: string[];
        try {
          const handle = await server.openStore(server.loadConfig(env));
          try {
            applied = await server.migrate(handle);
          } finally {
            await handle.close();
            exitWhenDone();
          }
        } catch (err) {
          throw translate(server, err);
        }
        emit(options, { applied }, () =>
          applied.length === 0
            ? "no pending migrations: the database is up to date"
            : applied.map((v) => `applied ${v}`).join("\n"),
        );
      }),
    );
  registerKeygenCommand(program, "register");
}
