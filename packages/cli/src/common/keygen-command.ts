// `counterpart keygen`: a new Ed25519 key pair in two files, for a partner to register its public
// key. Local only; both the operator's CLI and the partner CLI have it.

import fs from "node:fs";
import path from "node:path";
import { generateKeyPair } from "@counterpart/protocol";
import type { Command } from "commander";
import { fileErrorReason, UsageError } from "./errors.ts";
import { emit, formatRecord, type OutputOptions } from "./output.ts";
import { withGlobalOptions } from "./program.ts";

/**
 * What to do with the public key, after its path. A partner cannot register a key itself: the
 * operator does (`counterpart partner create --public-key`, an operator command the partner CLI
 * does not have), so the partner CLI says to send the file to the operator.
 */
export type PublicKeyNext = "send to the operator" | "register";

const publicKeyNext: Record<PublicKeyNext, string> = {
  "send to the operator": "send this file to the operator, who registers it",
  register: "register it: counterpart partner create --public-key ...",
};

export function registerKeygenCommand(program: Command, next: PublicKeyNext): void {
  program
    .command("keygen")
    .description("write a new Ed25519 key pair: DIR/private-key.pem (mode 0600) and DIR/public-key.pem")
    .requiredOption("--out <dir>", "folder for the two files (created if missing; existing files are kept)")
    .action(
      withGlobalOptions(async (options: OutputOptions & { out: string }) => {
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
            throw code === "EEXIST" || code === "EACCES" || code === "ENOTDIR"
              ? new UsageError(message)
              : err;
          }
        }
        emit(
          options,
          { private_key: privatePath, public_key: publicPath, public_key_pem: keys.publicKeyPem },
          () =>
            formatRecord([
              ["private key", `${privatePath} (mode 0600; keep it secret)`],
              ["public key", `${publicPath} (${publicKeyNext[next]})`],
            ]),
        );
      }),
    );
}
