// The commands that act locally: serve, migrate (on the store the environment configures) and
// keygen. The server package is loaded only by the commands that need it, so the other commands
// start quickly.

import fs from "node:fs";
import path from "node:path";
import { generateKeyPair } from "@counterpart/protocol";
import type { Command } from "commander";
import { fileErrorReason, UsageError } from "./errors.ts";
import type { Env } from "./local-files.ts";
import { emit, formatRecord, type OutputOptions, printJson } from "./output.ts";

type ServerModule = typeof import("@counterpart/server");

/** Configuration problems and a data folder in use are bad input (exit 2). */
function translate(server: ServerModule, err: unknown): unknown {
  if (err instanceof server.ConfigError) return new UsageError(err.problems);
  if (err instanceof server.FolderLockedError) return new UsageError(err.message);
  return err;
}

/**
 * PGlite leaves an Emscripten timer armed after close() that holds the process open for seconds
 * or longer. Once the command has finished (main.ts has set process.exitCode by the time this
 * fires), nothing else is worth waiting for.
 */
function exitWhenDone(): void {
  setTimeout(() => process.exit(), 0).unref();
}

export function registerLocalCommands(program: Command, env: Env): void {
  program
    .command("serve")
    .description("start the service (configuration from environment variables)")
    .option("--json", "print one JSON object with the listening addresses instead of the banner")
    .action(async (options: OutputOptions) => {
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
    });

  program
    .command("migrate")
    .description("apply pending database migrations (DATABASE_URL, else the PGlite data under DATA_DIR)")
    .option("--json", "print one JSON object on stdout")
    .action(async (options: OutputOptions) => {
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
    });

  program
    .command("keygen")
    .description("write a new Ed25519 key pair: DIR/private-key.pem (mode 0600) and DIR/public-key.pem")
    .requiredOption("--out <dir>", "folder for the two files (created if missing; existing files are kept)")
    .option("--json", "print one JSON object on stdout")
    .action(async (options: OutputOptions & { out: string }) => {
      const dir = path.resolve(options.out);
      const privatePath = path.join(dir, "private-key.pem");
      const publicPath = path.join(dir, "public-key.pem");
      for (const file of [privatePath, publicPath]) {
        if (fs.existsSync(file)) throw new UsageError(`${file} already exists; not overwriting it`);
      }
      try {
        fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
      } catch (err) {
        throw new UsageError(`cannot create ${dir}: ${fileErrorReason(err)}`);
      }
      const keys = generateKeyPair();
      // "wx": never replace a file that appeared since the check above.
      for (const [file, content, mode] of [
        [privatePath, keys.privateKeyPem, 0o600],
        [publicPath, keys.publicKeyPem, 0o644],
      ] as const) {
        try {
          fs.writeFileSync(file, content, { flag: "wx", mode });
        } catch (err) {
          const code = (err as NodeJS.ErrnoException).code;
          const message = `cannot write ${file}: ${fileErrorReason(err)}`;
          throw code === "EEXIST" || code === "EACCES" || code === "ENOTDIR" ? new UsageError(message) : err;
        }
      }
      emit(
        options,
        { private_key: privatePath, public_key: publicPath, public_key_pem: keys.publicKeyPem },
        () =>
          formatRecord([
            ["private key", `${privatePath} (mode 0600; keep it secret)`],
            ["public key", `${publicPath} (register it: counterpart partner create --public-key ...)`],
          ]),
      );
    });
}
