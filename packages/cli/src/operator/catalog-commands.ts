// `counterpart asset | pair | price | fee ...`: the operator's catalog and trading settings, through
// the admin API of the running service (admin-money-routes.ts, admin-trading-routes.ts). Booleans
// are `true` or `false`; decimals go to the service as typed, and it checks them (a refusal is exit
// 2 with its message, naming the flag).

import { type Command, InvalidArgumentError, Option } from "commander";
import { UsageError } from "../common/errors.ts";
import type { Env } from "../common/local-files.ts";
import { emit, type OutputOptions } from "../common/output.ts";
import { withGlobalOptions } from "../common/program.ts";
import {
  AdminClient,
  type AdminFlags,
  type AssetChanges,
  adminOptions,
  type PairChanges,
  resolveAdminTarget,
} from "./admin-client.ts";
import { formatAsset, formatPair, formatPartnerFees, formatPartnerPair } from "./admin-output.ts";

type AdminOptions = AdminFlags & OutputOptions;
type Bool = "true" | "false";

/** `--flag <bool>`: exactly `true` or `false` (anything else is exit 2). */
function boolOption(flag: string, description: string): Option {
  return new Option(`${flag} <bool>`, description).choices(["true", "false"]);
}

function wholeNumber(value: string): number {
  if (!/^[0-9]{1,9}$/.test(value)) throw new InvalidArgumentError("Expected a whole number.");
  return Number(value);
}

/** `none` clears a nullable setting; anything else goes to the service as typed. */
function orNone(value: string): string | null {
  return value === "none" ? null : value;
}

const bool = (v: Bool | undefined): boolean | undefined => (v === undefined ? undefined : v === "true");

/** The entries whose value is not undefined: only the flags given reach the service. */
function given<T extends object>(o: T): Partial<T> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Partial<T>;
}

function client(options: AdminFlags, env: Env): AdminClient {
  return new AdminClient(resolveAdminTarget(options, env));
}

export function registerCatalogCommands(program: Command, env: Env): void {
  registerAssetCommands(program, env);
  registerPairCommands(program, env);
  registerPriceCommands(program, env);
  registerFeeCommands(program, env);
}

function registerAssetCommands(program: Command, env: Env): void {
  const asset = program.command("asset").description("the asset catalog (through the admin API)");

  adminOptions(
    asset
      .command("upsert")
      .description("create an asset (needs --type and --name) or change the given fields of one")
      .argument("<id>", "asset id: 2 to 10 upper-case letters or digits, e.g. BTC")
      .addOption(new Option("--type <type>", "fiat or crypto").choices(["fiat", "crypto"]))
      .option("--name <name>", "English name (1 to 255 characters)")
      .option(
        "--decimals <n>",
        "decimal places of trade amounts (quotes' base amounts, computed amounts), 0 to 8; deposits and withdrawals take up to 8 whatever it is",
        wholeNumber,
      )
      .addOption(boolOption("--published", "listed in the public catalog"))
      .addOption(boolOption("--depositable", "clients may deposit it"))
      .addOption(boolOption("--withdrawable", "clients may withdraw it"))
      .option("--usd-rate <x>", "USD value of one unit, or none to clear it"),
  ).action(
    withGlobalOptions(
      async (
        id: string,
        options: AdminOptions & {
          type?: "fiat" | "crypto";
          name?: string;
          decimals?: number;
          published?: Bool;
          depositable?: Bool;
          withdrawable?: Bool;
          usdRate?: string;
        },
      ) => {
        const changes: AssetChanges = given({
          type: options.type,
          name_en: options.name,
          decimal_places: options.decimals,
          published: bool(options.published),
          depositable: bool(options.depositable),
          withdrawable: bool(options.withdrawable),
          usd_rate: options.usdRate === undefined ? undefined : orNone(options.usdRate),
        });
        const { created, asset: result } = await client(options, env).upsertAsset(id, changes);
        emit(options, { ...result, created }, () => formatAsset(result, created));
      },
    ),
  );
}

function registerPairCommands(program: Command, env: Env): void {
  const pair = program.command("pair").description("asset pairs (through the admin API)");

  adminOptions(
    pair
      .command("upsert")
      .description(
        "create a pair (not tradable, no price until `price set`) or change its settings; " +
          "--partner with --available shows or hides it for one partner",
      )
      .argument("<id>", "pair id BASE-QUOTE, e.g. BTC-AED (both assets must exist)")
      .addOption(boolOption("--tradable", "quotes may be asked for (else code 4000)"))
      .option("--min-volume <x>", "smallest base amount a quote may ask for")
      .option("--max-volume <x>", "largest base amount a quote may ask for")
      .option("--lifetime <seconds>", "how long a quote holds, 1 to 3600 seconds", wholeNumber)
      .option("--partner <id>", "the partner --available applies to")
      .addOption(boolOption("--available", "the partner sees the pair (needs --partner)")),
  ).action(
    withGlobalOptions(
      async (
        id: string,
        options: AdminOptions & {
          tradable?: Bool;
          minVolume?: string;
          maxVolume?: string;
          lifetime?: number;
          partner?: string;
          available?: Bool;
        },
      ) => {
        if ((options.partner === undefined) !== (options.available === undefined)) {
          throw new UsageError(
            options.partner === undefined
              ? "--available needs --partner ID: availability is set for one partner"
              : "--partner needs --available true|false",
          );
        }
        const changes: PairChanges = given({
          tradable: bool(options.tradable),
          min_volume: options.minVolume,
          max_volume: options.maxVolume,
          lifetime_s: options.lifetime,
        });
        const admin = client(options, env);
        const forPartner = options.partner;
        if (forPartner === undefined) {
          const result = await admin.upsertPair(id, changes);
          emit(options, { ...result }, () => formatPair(result));
          return;
        }
        // The pair's own settings first, so a pair created here can be made available at once.
        const updated = Object.keys(changes).length > 0 ? await admin.upsertPair(id, changes) : null;
        const partnerPair = await admin.setPartnerPair(forPartner, id, {
          available: options.available === "true",
        });
        if (updated === null) {
          emit(options, { ...partnerPair }, () => formatPartnerPair(partnerPair));
        } else {
          emit(
            options,
            { pair: updated, partner_pair: partnerPair },
            () => `${formatPair(updated)}\n\n${formatPartnerPair(partnerPair)}`,
          );
        }
      },
    ),
  );
}

function registerPriceCommands(program: Command, env: Env): void {
  const price = program.command("price").description("prices set by hand (through the admin API)");

  adminOptions(
    price
      .command("set")
      .description("set a pair's prices by hand; the feed leaves it alone until `price resume`")
      .argument("<pair>", "pair id, e.g. BTC-AED")
      .requiredOption("--buy <x>", "the price clients buy at (>= --sell)")
      .requiredOption("--sell <y>", "the price clients sell at (> 0)")
      .option(
        "--at <iso8601>",
        "when the prices were taken (default: now; at most 5 s past the service's clock)",
      )
      .requiredOption("--reason <text>", "why the pair is pinned (required; kept on the audit trail)"),
  ).action(
    withGlobalOptions(
      async (
        pairId: string,
        options: AdminOptions & { buy: string; sell: string; at?: string; reason?: string },
      ) => {
        const result = await client(options, env).setPrice(pairId, {
          buy: options.buy,
          sell: options.sell,
          ...(options.at === undefined ? {} : { at: options.at }),
          ...(options.reason === undefined ? {} : { reason: options.reason }),
        });
        emit(options, { ...result }, () => formatPair(result));
      },
    ),
  );

  adminOptions(
    price
      .command("resume")
      .description(
        "hand a pair's prices back to the feed, which prices it at once (refused when the service runs no feed: PRICE_FEED=manual)",
      )
      .argument("<pair>", "pair id, e.g. BTC-AED"),
  ).action(
    withGlobalOptions(async (pairId: string, options: AdminOptions) => {
      const result = await client(options, env).resumeFeed(pairId);
      emit(options, { ...result }, () => formatPair(result));
    }),
  );
}

function registerFeeCommands(program: Command, env: Env): void {
  const fee = program.command("fee").description("partners' fee rates and VAT (through the admin API)");

  adminOptions(
    fee
      .command("set")
      .description("set a partner's fee rate for one pair (--pair), or its default rate and VAT percentage")
      .requiredOption("--partner <id>", "partner id")
      .option("--pair <pair>", "set the partner's rate for this pair only")
      .option("--rate <x>", "fee rate from 0 to 1 (exclusive), e.g. 0.005; none clears it")
      .option("--vat-percentage <x>", "VAT charged on the fee, 0 to 100; none charges none"),
  ).action(
    withGlobalOptions(
      async (
        options: AdminOptions & { partner: string; pair?: string; rate?: string; vatPercentage?: string },
      ) => {
        const admin = client(options, env);
        const rate = options.rate === undefined ? undefined : orNone(options.rate);
        if (options.pair !== undefined) {
          if (options.vatPercentage !== undefined) {
            throw new UsageError("--vat-percentage is set per partner, not per pair: leave out --pair");
          }
          if (rate === undefined) throw new UsageError("nothing to set: pass --rate X (or none) with --pair");
          const result = await admin.setPartnerPair(options.partner, options.pair, { fee_rate: rate });
          emit(options, { ...result }, () => formatPartnerPair(result));
          return;
        }
        const vat = options.vatPercentage === undefined ? undefined : orNone(options.vatPercentage);
        if (rate === undefined && vat === undefined) {
          throw new UsageError("nothing to set: pass --rate X and/or --vat-percentage X|none");
        }
        const result = await admin.setPartnerFees(
          options.partner,
          given({ fee_rate: rate, vat_percentage: vat }),
        );
        emit(options, { partner_id: options.partner, ...result }, () =>
          formatPartnerFees(options.partner, result),
        );
      },
    ),
  );
}
