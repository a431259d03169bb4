// `counterpart operator ...`: the back office's operator accounts, through the admin API (admin
// role, or the bearer admin token): create (with a password read from stdin, or none: sign-in by
// one-time link in the sandbox), list, set-role, disable / enable, set-password, link.

import fs from "node:fs";
import { type Command, Option } from "commander";
import { UsageError } from "../common/errors.ts";
import type { Env } from "../common/local-files.ts";
import { emit, formatRecord, type OutputOptions } from "../common/output.ts";
import { withGlobalOptions } from "../common/program.ts";
import {
  AdminClient,
  type AdminFlags,
  type AdminOperator,
  adminOptions,
  resolveAdminTarget,
} from "./admin-client.ts";

type Options = AdminFlags & OutputOptions;
const roles = ["viewer", "compliance", "admin"] as const;

/** The password given on stdin: its first line, without the line ending. */
function readPassword(): string {
  let text: string;
  try {
    text = fs.readFileSync(0, "utf8");
  } catch {
    throw new UsageError("--password-stdin: could not read the password from standard input");
  }
  const password = text.split(/\r?\n/)[0] ?? "";
  if (password === "") throw new UsageError("--password-stdin: standard input holds no password");
  return password;
}

export function formatOperator(o: AdminOperator): string {
  return formatRecord([
    ["id", o.id],
    ["email", o.email],
    ["role", o.role],
    ["active", String(o.active)],
    ["has_password", String(o.has_password)],
    ["last_sign_in_at", o.last_sign_in_at ?? "(never)"],
    ["created_at", o.created_at],
  ]);
}

function formatTable(items: AdminOperator[]): string {
  if (items.length === 0) return "no operators";
  return items.map((o) => `${o.email}\t${o.role}\t${o.active ? "active" : "disabled"}\t${o.id}`).join("\n");
}

export function registerOperatorCommands(program: Command, env: Env): void {
  const group = program
    .command("operator")
    .description("the back office's operator accounts and their roles (through the admin API)");
  const client = (o: AdminFlags) => new AdminClient(resolveAdminTarget(o, env));

  adminOptions(
    group
      .command("create")
      .description("create an operator account (viewer, compliance or admin)")
      .requiredOption("--email <address>", "the operator's e-mail address (their sign-in name)")
      .addOption(new Option("--role <role>", "what the operator may do").choices(roles).makeOptionMandatory())
      .option("--password-stdin", "read the password (12 to 256 characters) from standard input"),
  ).action(
    withGlobalOptions(async (options: Options & { email: string; role: string; passwordStdin?: boolean }) => {
      const password = options.passwordStdin ? readPassword() : null;
      const created = await client(options).createOperator({
        email: options.email,
        role: options.role as (typeof roles)[number],
        password,
      });
      emit(options, { ...created }, () => formatOperator(created));
    }),
  );

  adminOptions(group.command("list").description("list the operator accounts")).action(
    withGlobalOptions(async (options: Options) => {
      const items = await client(options).listOperators();
      emit(options, { items }, () => formatTable(items));
    }),
  );

  const byEmail = (name: string, description: string) =>
    adminOptions(
      group
        .command(name)
        .description(description)
        .requiredOption("--email <address>", "the operator's e-mail address"),
    );

  byEmail("set-role", "change an operator's role (their sessions end)")
    .addOption(new Option("--role <role>", "the new role").choices(roles).makeOptionMandatory())
    .action(
      withGlobalOptions(async (options: Options & { email: string; role: string }) => {
        const c = client(options);
        const found = await c.findOperator(options.email);
        const changed = await c.changeOperator(found.id, "role", {
          role: options.role as (typeof roles)[number],
        });
        emit(options, { ...changed }, () => formatOperator(changed));
      }),
    );

  for (const [name, active, description] of [
    ["disable", false, "disable an operator: their sessions end and they cannot sign in"],
    ["enable", true, "enable a disabled operator again"],
  ] as const) {
    byEmail(name, description)
      .option("--reason <text>", "why (kept on the audit trail; required to disable)")
      .action(
        withGlobalOptions(async (options: Options & { email: string; reason?: string }) => {
          const c = client(options);
          const found = await c.findOperator(options.email);
          const changed = await c.changeOperator(found.id, "active", {
            active,
            ...(options.reason === undefined ? {} : { reason: options.reason }),
          });
          emit(options, { ...changed }, () => formatOperator(changed));
        }),
      );
  }

  byEmail("set-password", "set an operator's password, read from standard input (their sessions end)")
    .requiredOption("--password-stdin", "read the password from standard input")
    .action(
      withGlobalOptions(async (options: Options & { email: string }) => {
        const password = readPassword();
        const c = client(options);
        const found = await c.findOperator(options.email);
        const changed = await c.changeOperator(found.id, "password", { password });
        emit(options, { ...changed }, () => formatOperator(changed));
      }),
    );

  byEmail(
    "link",
    "print a one-time sign-in link for the operator (the sandbox only; good for 15 minutes)",
  ).action(
    withGlobalOptions(async (options: Options & { email: string }) => {
      const c = client(options);
      const found = await c.findOperator(options.email);
      const link = await c.signInLink(found.id);
      emit(options, { ...link }, () => `${link.url}\n(one use, until ${link.expires_at})`);
    }),
  );
}
