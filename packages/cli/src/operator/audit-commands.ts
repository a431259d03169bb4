// `counterpart audit list`: the audit trail of operator actions through the admin API, newest
// first, filtered and paged by the service.

import type { Command } from "commander";
import type { Env } from "../common/local-files.ts";
import { emit, type OutputOptions } from "../common/output.ts";
import { withGlobalOptions } from "../common/program.ts";
import {
  AdminClient,
  type AdminFlags,
  type AuditEntry,
  adminOptions,
  resolveAdminTarget,
} from "./admin-client.ts";

interface ListOptions extends AdminFlags, OutputOptions {
  actor?: string;
  action?: string;
  targetType?: string;
  target?: string;
  from?: string;
  to?: string;
  page?: string;
  pageSize?: string;
}

function who(e: AuditEntry): string {
  return e.actor.kind === "operator" ? (e.actor.email ?? e.actor.id ?? "operator") : e.actor.kind;
}

export function formatAuditEntries(items: AuditEntry[], total: number, page: number): string {
  if (items.length === 0) return "no audit entries";
  const lines = items.map((e) =>
    [
      e.at,
      who(e),
      e.action,
      `${e.target_type}:${e.target_id}`,
      e.reason === null ? "" : `reason: ${e.reason}`,
    ]
      .filter((x) => x !== "")
      .join("\t"),
  );
  return `${lines.join("\n")}\n(page ${page}, ${total} entr${total === 1 ? "y" : "ies"} in all)`;
}

export function registerAuditCommands(program: Command, env: Env): void {
  const audit = program
    .command("audit")
    .description("the audit trail of operator actions (through the admin API)");
  adminOptions(
    audit
      .command("list")
      .description("audit entries, newest first (--json for before and after values)")
      .option("--actor <id>", "an operator's id, or token, or system")
      .option("--action <action>", "e.g. client.status, pair.price_pin, partner.active")
      .option("--target-type <type>", "client, partner, pair, asset, operator or webhook_endpoint")
      .option("--target <id>", "the record's id (a client: PARTNER_ID/PARTNER_CLIENT_ID)")
      .option("--from <iso8601>", "entries at or after")
      .option("--to <iso8601>", "entries at or before")
      .option("--page <n>", "page, from 1")
      .option("--page-size <n>", "entries per page, 1 to 100"),
  ).action(
    withGlobalOptions(async (options: ListOptions) => {
      const page = await new AdminClient(resolveAdminTarget(options, env)).listAudit({
        actor: options.actor,
        action: options.action,
        target_type: options.targetType,
        target_id: options.target,
        from: options.from,
        to: options.to,
        page: options.page,
        page_size: options.pageSize,
      });
      emit(options, { ...page }, () => formatAuditEntries(page.items, page.total, page.page));
    }),
  );
}
