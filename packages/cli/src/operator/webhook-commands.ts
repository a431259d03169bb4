// `counterpart webhook list | disable <id> --reason ... | enable <id>`: the operator's view of the
// partners' webhook endpoints through the admin API (packages/server/src/modules/webhooks/
// webhooks-routes.ts, docs/reference.md §6.4). Disabling needs a reason, which goes on the audit
// trail; a disabled endpoint gets no delivery until it is enabled again. The partner registers
// and removes its own endpoints through the signed API (the SDK's webhookEndpoints); the operator
// side is `webhook`, so a partner-side command, if one is ever added, is `webhook-endpoint`.

import type { Command } from "commander";
import { UsageError } from "../common/errors.ts";
import type { Env } from "../common/local-files.ts";
import { clean, emit, formatTable, type OutputOptions } from "../common/output.ts";
import { withGlobalOptions } from "../common/program.ts";
import {
  AdminClient,
  type AdminFlags,
  type AdminWebhookEndpoint,
  adminOptions,
  resolveAdminTarget,
} from "./admin-client.ts";

type Options = AdminFlags & OutputOptions;

export function formatWebhookEndpoints(items: readonly AdminWebhookEndpoint[]): string {
  if (items.length === 0) return "no webhook endpoints";
  return formatTable(
    ["ID", "PARTNER", "STATUS", "TYPES", "URL"],
    items.map((e) => [
      e.id,
      e.partner_id,
      e.status,
      e.event_types.length === 0 ? "(all)" : e.event_types.join(","),
      e.url,
    ]),
  );
}

function formatWebhookEndpoint(e: AdminWebhookEndpoint): string {
  return `webhook endpoint ${e.id} is now ${e.status}\t${clean(e.url)}`;
}

export function registerWebhookCommands(program: Command, env: Env): void {
  const group = program
    .command("webhook")
    .description("partners' webhook endpoints (operator, admin API): list, disable, enable");
  const client = (options: AdminFlags) => new AdminClient(resolveAdminTarget(options, env));

  adminOptions(
    group
      .command("list")
      .description("every partner's webhook endpoints (or one partner's), oldest first")
      .option("--partner <id>", "only this partner's (its UUID)"),
  ).action(
    withGlobalOptions(async (options: Options & { partner?: string }) => {
      const items = await client(options).listWebhookEndpoints(options.partner);
      emit(options, { items }, () => formatWebhookEndpoints(items));
    }),
  );

  adminOptions(
    group
      .command("disable")
      .description("stop every delivery to an endpoint until it is enabled again")
      .argument("<endpoint_id>", "the endpoint's id (UUID), as `webhook list` shows it")
      .requiredOption("--reason <text>", "why (kept on the audit trail; required)"),
  ).action(
    withGlobalOptions(async (id: string, options: Options & { reason: string }) => {
      if (options.reason.trim() === "") throw new UsageError("--reason: give the reason for disabling");
      const changed = await client(options).setWebhookEnabled(id, false, options.reason);
      emit(options, { ...changed }, () => formatWebhookEndpoint(changed));
    }),
  );

  adminOptions(
    group
      .command("enable")
      .description("deliver to a disabled (or failing) endpoint again")
      .argument("<endpoint_id>", "the endpoint's id (UUID)")
      .option("--reason <text>", "why (kept on the audit trail)"),
  ).action(
    withGlobalOptions(async (id: string, options: Options & { reason?: string }) => {
      const changed = await client(options).setWebhookEnabled(id, true, options.reason);
      emit(options, { ...changed }, () => formatWebhookEndpoint(changed));
    }),
  );
}
