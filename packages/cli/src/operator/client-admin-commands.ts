// `counterpart client ...`: the operator acting as compliance team on a partner's client, through
// the admin API of the running service (packages/server/src/modules/admin/admin-clients-routes.ts):
// set its status (docs/reference.md §3.1: only the service changes it) and its active flag (§3.2). The `client`
// group also holds the partner's own commands (partner/client-commands.ts; see common/command-groups.ts).

import { clientStatuses } from "@counterpart/protocol";
import { type Command, Option } from "commander";
import { clientGroupDescription, commandGroup } from "../common/command-groups.ts";
import { FailureError, networkReason, UsageError } from "../common/errors.ts";
import type { Env } from "../common/local-files.ts";
import { emit, formatRecord, type OutputOptions } from "../common/output.ts";
import { withGlobalOptions } from "../common/program.ts";
import { type AdminFlags, type AdminTarget, adminOptions, resolveAdminTarget } from "./admin-client.ts";

/** How long one admin call may take before the CLI gives up. */
const requestTimeoutMs = 30_000;

/** A client as the admin API returns it (docs/reference.md §2.1); only the fields printed are named. */
export interface AdminClientRecord {
  id: number;
  partner_client_id: string;
  status: string;
  active: boolean;
  created_at: string;
  verified_at: string | null;
  [field: string]: unknown;
}

interface ClientTarget {
  partner: string;
  client: string;
}

type ClientOptions = AdminFlags & OutputOptions & ClientTarget;

function clientPath(t: ClientTarget): string {
  return `/admin/partners/${encodeURIComponent(t.partner)}/clients/${encodeURIComponent(t.client)}`;
}

function validationMessage(detail: unknown, fallback: string): string {
  if (!Array.isArray(detail) || detail.length === 0) return fallback;
  return detail
    .map((d: { loc?: unknown; msg?: unknown }) => {
      const loc = Array.isArray(d.loc) ? d.loc.filter((p) => p !== "body").join(".") : "";
      const msg = typeof d.msg === "string" ? d.msg : "invalid";
      return loc === "" ? msg : `${loc}: ${msg}`;
    })
    .join("; ");
}

/** One PUT to the admin API; the answer's client, or the failure as the CLI's exit codes say. */
async function putClient(target: AdminTarget, who: ClientTarget, suffix: string, body: unknown) {
  const urlPath = `${clientPath(who)}/${suffix}`;
  let response: Response;
  try {
    response = await fetch(`${target.url}${urlPath}`, {
      method: "PUT",
      headers: { Authorization: `Bearer ${target.token}`, "Content-Type": "application/json" },
      body: JSON.stringify(body),
      redirect: "manual",
      signal: AbortSignal.timeout(requestTimeoutMs),
    });
  } catch (err) {
    throw new FailureError(
      `cannot reach the admin API at ${target.url} (${networkReason(err, requestTimeoutMs)}); is the service running?`,
    );
  }
  const text = await response.text().catch(() => "");
  let parsed: { result?: unknown; msg?: unknown; msg_detail?: unknown } | null = null;
  try {
    parsed = text === "" ? null : JSON.parse(text);
  } catch {
    parsed = null;
  }
  if (response.ok) {
    const result = parsed?.result as AdminClientRecord | undefined;
    if (typeof result?.partner_client_id !== "string") {
      throw new FailureError(`unexpected answer from the admin API to PUT ${urlPath}`);
    }
    return result;
  }
  switch (response.status) {
    case 401:
      throw new FailureError(
        `the admin API at ${target.url} refused the admin token (401 Unauthorized); check ${target.tokenSource}`,
      );
    case 404:
      throw new UsageError(`partner ${who.partner} has no client "${who.client}"`);
    case 422:
      throw new UsageError(validationMessage(parsed?.msg_detail, "the request was refused as invalid"));
  }
  const msg = typeof parsed?.msg === "string" ? `: ${parsed.msg}` : "";
  throw new FailureError(`the admin API answered ${response.status}${msg}`);
}

export function formatClient(c: AdminClientRecord): string {
  return formatRecord([
    ["id", String(c.id)],
    ["partner_client_id", c.partner_client_id],
    ["status", c.status],
    ["active", String(c.active)],
    ["verified_at", c.verified_at ?? "(none)"],
    ["created_at", c.created_at],
  ]);
}

function clientCommand(parent: Command, name: string, description: string): Command {
  return adminOptions(
    parent
      .command(name)
      .description(description)
      .requiredOption("--partner <id>", "the partner's id (UUID)")
      .requiredOption("--client <partner_client_id>", "the client's id as the partner knows it")
      .requiredOption("--reason <text>", "why (required; kept on the audit trail)"),
  );
}

export function registerClientCommands(program: Command, env: Env): void {
  const client = commandGroup(program, "client", clientGroupDescription);

  clientCommand(
    client,
    "set-status",
    "operator (admin API): set a client's verification status (only verified clients trade)",
  )
    .addOption(
      new Option("--status <status>", "the new status").choices(clientStatuses).makeOptionMandatory(),
    )
    .action(
      withGlobalOptions(async (options: ClientOptions & { status: string; reason?: string }) => {
        const updated = await putClient(resolveAdminTarget(options, env), options, "status", {
          status: options.status,
          ...(options.reason === undefined ? {} : { reason: options.reason }),
        });
        emit(options, { ...updated }, () => formatClient(updated));
      }),
    );

  clientCommand(
    client,
    "set-active",
    "operator (admin API): block (false) or unblock (true) a client's trading and funding",
  )
    .addOption(
      new Option("--active <bool>", "the new active flag").choices(["true", "false"]).makeOptionMandatory(),
    )
    .action(
      withGlobalOptions(async (options: ClientOptions & { active: "true" | "false"; reason?: string }) => {
        if (options.active !== "true" && options.active !== "false") {
          throw new UsageError(`--active: expected true or false, got "${options.active}"`);
        }
        const updated = await putClient(resolveAdminTarget(options, env), options, "active", {
          active: options.active === "true",
          ...(options.reason === undefined ? {} : { reason: options.reason }),
        });
        emit(options, { ...updated }, () => formatClient(updated));
      }),
    );
}
