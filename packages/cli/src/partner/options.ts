// Options and argument parsing shared by the partner commands (client, document, deposit, withdraw,
// balance, quote, execute, order): who signs (target.ts), --plain, paging, and the
// files and JSON payloads they read. Bad values are UsageErrors or commander errors: exit 2.

import fs from "node:fs";
import { type Command, InvalidArgumentError } from "commander";
import { fileErrorReason, UsageError } from "../common/errors.ts";
import type { OutputOptions } from "../common/output.ts";
import type { AmountOptions } from "./output.ts";
import { type PartnerFlags, partnerFlags } from "./target.ts";

export type PartnerOptions = PartnerFlags & OutputOptions;

/** A JSON payload file (--file) is a client record: a few KiB. */
const payloadBytesMax = 1024 * 1024;

/** A partner command with --partner, --key and --url (--json is global: common/program.ts). */
export function partnerCommand(parent: Command, name: string, description: string): Command {
  return partnerFlags(parent.command(name).description(description));
}

/** Adds --plain to a command that prints amounts. */
export function plainOption(command: Command): Command {
  return command.option(
    "--plain",
    "print amounts in plain notation with 8 decimals (never rounded) instead of exactly as returned",
  );
}

export type AmountCommandOptions = PartnerOptions & AmountOptions;

/** A commander parser for a whole number from `min`, e.g. --page. */
export function integerFrom(min: number): (value: string) => number {
  return (value: string) => {
    if (!/^[0-9]{1,15}$/.test(value) || Number(value) < min) {
      throw new InvalidArgumentError(`expected a whole number from ${min}, got "${value}"`);
    }
    return Number(value);
  };
}

export interface PageOptions {
  page?: number | undefined;
  pageSize?: number | undefined;
  all?: boolean | undefined;
}

/** --page, --page-size and --all of a paginated list. */
export function pageOptions(command: Command, noun: string): Command {
  return command
    .option("--page <n>", "page to show, from 1 (default 1)", integerFrom(1))
    .option("--page-size <n>", "items per page, 1 to 100 (default 10; with --all 100)", integerFrom(1))
    .option("--all", `every ${noun} on every page (from --page, default 1), fetched page by page`);
}

/** The SDK's page parameters of these options. */
export function pageParams(options: PageOptions): { page?: number; page_size?: number } {
  return {
    ...(options.page === undefined ? {} : { page: options.page }),
    ...(options.pageSize === undefined ? {} : { page_size: options.pageSize }),
  };
}

/** Every item of an SDK listAll iterator. */
export async function collect<T>(items: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const item of items) out.push(item);
  return out;
}

/** A positive numeric id (order, document) given as an argument. */
export function positiveId(value: string, what: string): number {
  if (!/^[1-9][0-9]{0,15}$/.test(value) || !Number.isSafeInteger(Number(value))) {
    throw new UsageError(`${what} must be a positive whole number, got "${value}"`);
  }
  return Number(value);
}

function parseObject(text: string, source: string): Record<string, unknown> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (err) {
    throw new UsageError(`${source} is not valid JSON: ${(err as Error).message}`);
  }
  if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) {
    throw new UsageError(`${source} must hold one JSON object`);
  }
  return parsed as Record<string, unknown>;
}

/**
 * The JSON object given with --data TEXT or --file FILE ("-" reads stdin), or null when neither
 * was given. Both at once is bad input.
 */
export function readPayload(options: {
  data?: string | undefined;
  file?: string | undefined;
}): Record<string, unknown> | null {
  if (options.data !== undefined && options.file !== undefined) {
    throw new UsageError("give the payload with --data or with --file, not both");
  }
  if (options.data !== undefined) return parseObject(options.data, "--data");
  if (options.file === undefined) return null;
  const file = options.file;
  let text: string;
  try {
    if (file !== "-") {
      const stat = fs.statSync(file);
      if (stat.isDirectory()) throw new UsageError(`--file ${file}: is a directory`);
      if (stat.size > payloadBytesMax) throw new UsageError(`--file ${file}: over 1 MiB, not a payload`);
    }
    text = fs.readFileSync(file === "-" ? 0 : file, "utf8");
  } catch (err) {
    if (err instanceof UsageError) throw err;
    throw new UsageError(`cannot read --file ${file}: ${fileErrorReason(err)}`);
  }
  return parseObject(text, file === "-" ? "--file - (stdin)" : `--file ${file}`);
}
