// `counterpart partner ...`: provisioning partners through the admin API of the running service.
// Key files and CIDR ranges are checked here first, so a typo is reported without a round trip
// (the admin API checks them again).

import type { Command } from "commander";
import { UsageError } from "../common/errors.ts";
import { type Env, readPublicKeyFile } from "../common/local-files.ts";
import { emit, type OutputOptions } from "../common/output.ts";
import { withGlobalOptions } from "../common/program.ts";
import { AdminClient, type AdminFlags, adminOptions, resolveAdminTarget } from "./admin-client.ts";
import {
  formatPartner,
  formatPartnerKey,
  formatPartnerKeyTable,
  formatPartnerTable,
} from "./admin-output.ts";

type AdminOptions = AdminFlags & OutputOptions;

async function checkIps(values: readonly string[]): Promise<string[]> {
  // Loaded on demand: the server package is heavy, and only these commands need its CIDR check.
  const { isCidrOrIp } = await import("@counterpart/server");
  for (const v of values) {
    if (!isCidrOrIp(v)) throw new UsageError(`--allow-ip: "${v}" is not an IP address or CIDR range`);
  }
  return [...values];
}

/** The largest budget the admin API takes (config/limits.ts rateLimitPerWindowMax). */
const budgetMax = 10_000_000;

/** `--reads 600` → {reads: 600}; `--reads default` → {reads: null}; absent → {}. */
function budgetOption(flag: string, name: string, value: string | undefined): Record<string, number | null> {
  if (value === undefined) return {};
  if (value === "default") return { [name]: null };
  if (!/^[0-9]{1,8}$/.test(value) || Number(value) < 1 || Number(value) > budgetMax) {
    throw new UsageError(
      `${flag}: expected requests per minute from 1 to ${budgetMax}, or default; got "${value}"`,
    );
  }
  return { [name]: Number(value) };
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
  ).action(
    withGlobalOptions(
      async (options: AdminOptions & { name: string; publicKey: string; allowIp?: string[] }) => {
        const publicKeyPem = readPublicKeyFile(options.publicKey);
        const allowedIps = await checkIps(options.allowIp ?? []);
        const created = await client(options, env).createPartner({
          name: options.name,
          publicKeyPem,
          allowedIps,
        });
        emit(options, { ...created }, () => formatPartner(created));
      },
    ),
  );

  adminOptions(partner.command("list").description("list partners")).action(
    withGlobalOptions(async (options: AdminOptions) => {
      const items = await client(options, env).listPartners();
      emit(options, { items }, () => formatPartnerTable(items));
    }),
  );

  adminOptions(partner.command("show").description("show one partner").argument("<id>", "partner id")).action(
    withGlobalOptions(async (id: string, options: AdminOptions) => {
      const found = await client(options, env).showPartner(id);
      emit(options, { ...found }, () => formatPartner(found));
    }),
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
        .argument("<id>", "partner id")
        .requiredOption("--reason <text>", "why (required; kept on the audit trail)"),
    ).action(
      withGlobalOptions(async (id: string, options: AdminOptions & { reason?: string }) => {
        const updated = await client(options, env).setActive(id, active, options.reason);
        emit(options, { ...updated }, () => formatPartner(updated));
      }),
    );
  }

  adminOptions(
    partner
      .command("set-key")
      .description("replace all the partner's public keys by this one (to rotate: partner key add)")
      .argument("<id>", "partner id")
      .requiredOption("--public-key <file>", "the partner's Ed25519 public key (PEM, SubjectPublicKeyInfo)"),
  ).action(
    withGlobalOptions(async (id: string, options: AdminOptions & { publicKey: string }) => {
      const publicKeyPem = readPublicKeyFile(options.publicKey);
      const updated = await client(options, env).setKey(id, publicKeyPem);
      emit(options, { ...updated }, () => formatPartner(updated));
    }),
  );

  // Rotation without downtime (docs/operations.md): add the new key, let the partner switch its
  // signer, retire the old key.
  const key = partner.command("key").description("the partner's public keys (up to three active at once)");

  adminOptions(
    key
      .command("add")
      .description("add an active key; the partner's other keys stay active")
      .argument("<id>", "partner id")
      .requiredOption("--public-key <file>", "the Ed25519 public key (PEM, SubjectPublicKeyInfo)")
      .requiredOption("--label <label>", "what the key is, for the operator (1 to 100 characters)"),
  ).action(
    withGlobalOptions(async (id: string, options: AdminOptions & { publicKey: string; label: string }) => {
      const publicKeyPem = readPublicKeyFile(options.publicKey);
      const added = await client(options, env).addKey(id, options.label, publicKeyPem);
      emit(options, { ...added }, () => formatPartnerKey(added));
    }),
  );

  adminOptions(
    key
      .command("list")
      .description("list the partner's keys, retired ones too")
      .argument("<id>", "partner id"),
  ).action(
    withGlobalOptions(async (id: string, options: AdminOptions) => {
      const items = await client(options, env).listKeys(id);
      emit(options, { items }, () => formatPartnerKeyTable(items));
    }),
  );

  adminOptions(
    key
      .command("retire")
      .description("retire a key: requests it signs are refused (401) at once")
      .argument("<id>", "partner id")
      .argument("<key-id>", "key id (partner key list)"),
  ).action(
    withGlobalOptions(async (id: string, keyId: string, options: AdminOptions) => {
      const retired = await client(options, env).retireKey(id, keyId);
      emit(options, { ...retired }, () => formatPartnerKey(retired));
    }),
  );

  adminOptions(
    partner
      .command("limits")
      .description(
        "set the partner's rate limits, in requests per minute (a number, or default); classes not given stay",
      )
      .argument("<id>", "partner id")
      .option("--reads <n>", "GET requests")
      .option("--writes <n>", "POST, PUT and DELETE requests other than quotes")
      .option("--quotes <n>", "POST /v1/partner/quotes"),
  ).action(
    withGlobalOptions(
      async (id: string, options: AdminOptions & { reads?: string; writes?: string; quotes?: string }) => {
        const body = {
          ...budgetOption("--reads", "reads", options.reads),
          ...budgetOption("--writes", "writes", options.writes),
          ...budgetOption("--quotes", "quotes", options.quotes),
        };
        if (Object.keys(body).length === 0) {
          throw new UsageError("give at least one of --reads, --writes, --quotes (a number, or default)");
        }
        const updated = await client(options, env).setRateLimits(id, body);
        emit(options, { ...updated }, () => formatPartner(updated));
      },
    ),
  );

  adminOptions(
    partner
      .command("set-ips")
      .description("replace the partner's IP allow-list")
      .argument("<id>", "partner id")
      .requiredOption("--allow-ip <cidr...>", "IP addresses or CIDR ranges signed requests may come from"),
  ).action(
    withGlobalOptions(async (id: string, options: AdminOptions & { allowIp: string[] }) => {
      const allowedIps = await checkIps(options.allowIp);
      const updated = await client(options, env).setIps(id, allowedIps);
      emit(options, { ...updated }, () => formatPartner(updated));
    }),
  );
}
