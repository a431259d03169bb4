// `counterpart partner ...`: provisioning partners through the admin API of the running service.
// Key files and CIDR ranges are checked here first, so a typo is reported without a round trip
// (the admin API checks them again).

import type { Command } from "commander";
import { AdminClient, type AdminFlags, resolveAdminTarget } from "./admin-client.ts";
import { UsageError } from "./errors.ts";
import { type Env, readPublicKeyFile } from "./local-files.ts";
import { emit, formatPartner, formatPartnerTable, type OutputOptions } from "./output.ts";

type AdminOptions = AdminFlags & OutputOptions;

/** --json, --admin-url and --admin-token, shared by every admin command. */
export function adminOptions(command: Command): Command {
  return command
    .option("--json", "print one JSON object on stdout")
    .option(
      "--admin-url <url>",
      "admin API address (default: COUNTERPART_ADMIN_URL, else DATA_DIR/endpoints.json)",
    )
    .option("--admin-token <token>", "admin bearer token (default: ADMIN_TOKEN, else DATA_DIR/admin-token)");
}

async function checkIps(values: readonly string[]): Promise<string[]> {
  // Loaded on demand: the server package is heavy, and only these commands need its CIDR check.
  const { isCidrOrIp } = await import("@counterpart/server");
  for (const v of values) {
    if (!isCidrOrIp(v)) throw new UsageError(`--allow-ip: "${v}" is not an IP address or CIDR range`);
  }
  return [...values];
}

function client(options: AdminFlags, env: Env): AdminClient {
  return new AdminClient(resolveAdminTarget(options, env));
}

export function registerPartnerCommands(program: Command, env: Env): void {
  const partner = program.command("partner").description("provision partners (through the admin API)");

  adminOptions(
    partner
      .command("create")
      .description("register a partner; prints its id")
      .requiredOption("--name <name>", "display name (1 to 255 characters)")
      .requiredOption("--public-key <file>", "the partner's Ed25519 public key (PEM, SubjectPublicKeyInfo)")
      .option(
        "--allow-ip <cidr...>",
        "an IP address or CIDR range signed requests may come from (repeatable)",
      ),
  ).action(async (options: AdminOptions & { name: string; publicKey: string; allowIp?: string[] }) => {
    const publicKeyPem = readPublicKeyFile(options.publicKey);
    const allowedIps = await checkIps(options.allowIp ?? []);
    const created = await client(options, env).createPartner({
      name: options.name,
      publicKeyPem,
      allowedIps,
    });
    emit(options, { ...created }, () => formatPartner(created));
  });

  adminOptions(partner.command("list").description("list partners")).action(async (options: AdminOptions) => {
    const items = await client(options, env).listPartners();
    emit(options, { items }, () => formatPartnerTable(items));
  });

  adminOptions(partner.command("show").description("show one partner").argument("<id>", "partner id")).action(
    async (id: string, options: AdminOptions) => {
      const found = await client(options, env).showPartner(id);
      emit(options, { ...found }, () => formatPartner(found));
    },
  );

  for (const [name, active] of [
    ["enable", true],
    ["disable", false],
  ] as const) {
    adminOptions(
      partner
        .command(name)
        .description(
          active
            ? "accept the partner's signed requests again"
            : "refuse the partner's signed requests (401)",
        )
        .argument("<id>", "partner id"),
    ).action(async (id: string, options: AdminOptions) => {
      const updated = await client(options, env).setActive(id, active);
      emit(options, { ...updated }, () => formatPartner(updated));
    });
  }

  adminOptions(
    partner
      .command("set-key")
      .description("replace the partner's public key")
      .argument("<id>", "partner id")
      .requiredOption("--public-key <file>", "the partner's Ed25519 public key (PEM, SubjectPublicKeyInfo)"),
  ).action(async (id: string, options: AdminOptions & { publicKey: string }) => {
    const publicKeyPem = readPublicKeyFile(options.publicKey);
    const updated = await client(options, env).setKey(id, publicKeyPem);
    emit(options, { ...updated }, () => formatPartner(updated));
  });

  adminOptions(
    partner
      .command("set-ips")
      .description("replace the partner's IP allow-list")
      .argument("<id>", "partner id")
      .requiredOption("--allow-ip <cidr...>", "IP addresses or CIDR ranges signed requests may come from"),
  ).action(async (id: string, options: AdminOptions & { allowIp: string[] }) => {
    const allowedIps = await checkIps(options.allowIp);
    const updated = await client(options, env).setIps(id, allowedIps);
    emit(options, { ...updated }, () => formatPartner(updated));
  });
}
