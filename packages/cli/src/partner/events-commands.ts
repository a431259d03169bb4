// `counterpart events tail`: the partner's event feed (docs/reference.md §6, beyond the contract),
// one JSON line per event on stdout, oldest first, from `--after` (an event id) or the oldest kept.
// With --follow it keeps reading as new events arrive, until interrupted; the last id printed is
// where a later run resumes (`--after ID`). `counterpart events get <event_id>` prints one event.

import { setTimeout as delay } from "node:timers/promises";
import { type Command, Option } from "commander";
import { UsageError } from "../common/errors.ts";
import type { Env } from "../common/local-files.ts";
import { emit, type OutputOptions } from "../common/output.ts";
import { withGlobalOptions } from "../common/program.ts";
import { callApi, partnerApi } from "./api.ts";
import { partnerCommand } from "./options.ts";
import type { PartnerFlags } from "./target.ts";

const eventTypes = [
  "order.completed",
  "order.rejected",
  "client.created",
  "client.updated",
  "client.status_changed",
  "client.activation_changed",
  "document.created",
] as const;

export function registerEventsCommands(program: Command, env: Env): void {
  const events = program.command("events").description("the partner's event feed (partner API)");
  partnerCommand(events, "get", "print one event (JSON), by its id")
    .argument("<event_id>", "the event's id (evt_...)")
    .action(
      withGlobalOptions(async (id: string, options: PartnerFlags & OutputOptions) => {
        const event = await callApi(partnerApi(options, env), (c) => c.events.get(id));
        emit(options, { ...event }, () => JSON.stringify(event, null, 2));
      }),
    );
  partnerCommand(events, "tail", "print events as JSON lines, oldest first; --follow keeps reading")
    .option("--after <event_id>", "start after this event (the last one you processed)")
    .addOption(new Option("--type <type...>", "only events of these types").choices(eventTypes))
    .option("--client <partner_client_id>", "only this client's events")
    .option("--follow", "keep reading new events until interrupted")
    .option("--interval-ms <ms>", "with --follow, the pause between reads once caught up", "2000")
    .action(
      withGlobalOptions(
        async (
          options: PartnerFlags & {
            after?: string;
            type?: (typeof eventTypes)[number][];
            client?: string;
            follow?: boolean;
            intervalMs: string;
          },
        ) => {
          const interval = Number(options.intervalMs);
          if (!/^[0-9]+$/.test(options.intervalMs) || interval < 100 || interval > 600_000)
            throw new UsageError("--interval-ms must be an integer from 100 to 600000");
          const api = partnerApi(options, env);
          let after = options.after;
          for (;;) {
            const page = await callApi(api, (c) =>
              c.events.page({
                ...(after === undefined ? {} : { after }),
                ...(options.type === undefined ? {} : { type: options.type }),
                ...(options.client === undefined ? {} : { partner_client_id: options.client }),
                limit: 100,
              }),
            );
            for (const e of page.items) process.stdout.write(`${JSON.stringify(e)}\n`);
            after = page.next_cursor ?? after;
            if (page.has_more) continue;
            if (!options.follow) return;
            await delay(interval);
          }
        },
      ),
    );
}
