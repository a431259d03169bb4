// `counterpart client create|get|list|update|activate|deactivate` and `counterpart document
// upload|list|get`: a partner's clients and their KYC documents (docs/reference.md §4.6, §4.7), through the SDK,
// signed as the partner target.ts resolves (flags, environment, else the sandbox's demo
// partner). `--client` always names the client by its partner_client_id.
//
// Client fields (create and update) come from a JSON object, --file FILE (- for stdin) or
// --data JSON, and/or from one flag per field (--name, --email, --street, --purpose ...); a flag
// replaces the payload's value. `create` sends that object, with account_type "personal" unless
// the payload says otherwise. `update` is a full replacement (docs/reference.md §2.1 rule 6): without --file or
// --data it starts from the client's current record, so `client update --client C --email E`
// changes only the e-mail. Fields an update cannot change (partner_client_id, the immutable
// account_type, birth_date and place_of_birth_id, and the read-only id, status, active,
// created_at, verified_at) are dropped from the payload when they equal the record's (so the
// output of `client get --json` can be edited and sent back) and refused when they differ.

import fs from "node:fs";
import path from "node:path";
import {
  accountPurposes,
  type Client,
  type ClientCreateRequest,
  type ClientUpdateRequest,
  clientStatuses,
  type DocumentFile,
  documentTypes,
  employmentStatuses,
} from "@counterpart/sdk";
import { type Command, Option } from "commander";
import { clientGroupDescription, commandGroup } from "../common/command-groups.ts";
import { fileErrorReason, UsageError } from "../common/errors.ts";
import type { Env } from "../common/local-files.ts";
import { emit } from "../common/output.ts";
import { withGlobalOptions } from "../common/program.ts";
import { callApi, partnerApi } from "./api.ts";
import {
  collect,
  type PageOptions,
  type PartnerOptions,
  pageOptions,
  pageParams,
  partnerCommand,
  positiveId,
  readPayload,
} from "./options.ts";
import {
  count,
  formatClientRecord,
  formatClientTable,
  formatDocument,
  formatDocumentTable,
  pageFooter,
  withFooter,
} from "./output.ts";
import { ProgressLine, progressFetch } from "./upload-progress.ts";

/** docs/reference.md §2.2: at most 5 MB a file; checked here so a large file is not read and sent in vain. */
const documentBytesMax = 5 * 1024 * 1024;

interface FieldFlag {
  /** A new Option for one command (each command holds its own). */
  option: () => Option;
  /** The options' key commander stores the value under, e.g. "birthDate". */
  attribute: string;
  /** Where the value goes in the client payload. */
  path: readonly [string] | readonly [string, string];
  /** Fixed at creation (docs/reference.md §2.1 rule 5): not a flag of `update`. */
  createOnly?: true;
}

function field(
  flags: string,
  description: string,
  fieldPath: FieldFlag["path"],
  extra: { createOnly?: true; choices?: readonly string[] } = {},
): FieldFlag {
  const option = () => {
    const made = new Option(flags, `${description} (${fieldPath.join(".")})`);
    return extra.choices === undefined ? made : made.choices(extra.choices);
  };
  return {
    option,
    attribute: option().attributeName(),
    path: fieldPath,
    ...(extra.createOnly ? { createOnly: true } : {}),
  };
}

/** One flag per client field (docs/reference.md §2.1), in the order of the record. */
const clientFields: readonly FieldFlag[] = [
  field("--name <name>", "single full legal name", ["name"]),
  field("--birth-date <date>", "YYYY-MM-DD; immutable", ["birth_date"], { createOnly: true }),
  field("--email <email>", "e-mail address, unique", ["email"]),
  field("--phone <phone>", "international format with a leading +, unique", ["phone"]),
  field("--residency <country>", "country id, e.g. ae", ["residency_id"]),
  field("--citizenship <country>", "country id", ["citizenship_id"]),
  field("--place-of-birth <country>", "country id; immutable", ["place_of_birth_id"], { createOnly: true }),
  field("--national-number <number>", "optional", ["national_number"]),
  field("--government-id <number>", "government ID number, unique", ["government_id_number"]),
  field("--government-id-expiry <date>", "YYYY-MM-DD", ["government_id_doe"]),
  field("--visa-number <number>", "needed when residency differs from citizenship", [
    "residency_visa_number",
  ]),
  field("--visa-expiry <date>", "YYYY-MM-DD", ["residency_visa_doe"]),
  field("--street <street>", "address", ["address", "street"]),
  field("--city <city>", "address", ["address", "city"]),
  field("--postal-code <code>", "address", ["address", "postal_code"]),
  field("--unit <unit>", "address", ["address", "unit"]),
  field("--employment <status>", "employment status", ["employment", "status"], {
    choices: employmentStatuses,
  }),
  field("--company <name>", "employer", ["employment", "company"]),
  field("--job-industry <code>", "e.g. banking_financial_services", ["employment", "job_industry"]),
  field("--job-level <level>", "e.g. senior (not for self_employed)", ["employment", "job_level"]),
  field("--job-title <title>", "job title", ["employment", "job_title"]),
  field("--trading-volume <bracket>", "expected monthly volume, e.g. 1000_10000", ["trading_volume"]),
  field("--purpose <purpose...>", "account purposes (one or more)", ["account_purpose"], {
    choices: accountPurposes,
  }),
];

/** What an update cannot change: the path's id, the immutable fields, and the read-only ones. */
const notUpdatable = [
  "partner_client_id",
  "account_type",
  "birth_date",
  "place_of_birth_id",
  "id",
  "status",
  "active",
  "created_at",
  "verified_at",
] as const;

type PayloadOptions = PartnerOptions & { client?: string; data?: string; file?: string } & Record<
    string,
    unknown
  >;

function payloadCommand(parent: Command, name: string, description: string, create: boolean): Command {
  const command = partnerCommand(parent, name, description)
    .option("--file <file>", "the client fields as one JSON object (- reads stdin)")
    .option("--data <json>", "the client fields as one JSON object, inline");
  if (create) command.option("--client <partner_client_id>", "the client's id (partner_client_id)");
  else command.requiredOption("--client <partner_client_id>", "the client to update (partner_client_id)");
  for (const f of clientFields) if (create || !f.createOnly) command.addOption(f.option());
  return command;
}

/** Writes each given field flag into `payload` (a flag replaces the payload's value). */
function applyFieldFlags(payload: Record<string, unknown>, options: PayloadOptions, create: boolean): void {
  for (const f of clientFields) {
    if (!create && f.createOnly) continue;
    const value = options[f.attribute];
    if (value === undefined) continue;
    const [head, leaf] = f.path;
    if (leaf === undefined) {
      payload[head] = value;
      continue;
    }
    const inner = payload[head];
    const object =
      typeof inner === "object" && inner !== null && !Array.isArray(inner)
        ? (inner as Record<string, unknown>)
        : {};
    object[leaf] = value;
    payload[head] = object;
  }
}

/** The client record's fields that an update replaces. */
function updatableFields(c: Client): Record<string, unknown> {
  const copy: Record<string, unknown> = structuredClone({ ...c });
  for (const key of notUpdatable) delete copy[key];
  return copy;
}

/** Drops the fields an update cannot change when they equal the record's; refuses them otherwise. */
function dropUnchangeable(payload: Record<string, unknown>, current: Client): void {
  const record = current as unknown as Record<string, unknown>;
  for (const key of notUpdatable) {
    if (!Object.hasOwn(payload, key)) continue;
    if (JSON.stringify(payload[key]) !== JSON.stringify(record[key])) {
      throw new UsageError(
        `${key} cannot be changed by an update (the client has ${JSON.stringify(record[key])}, ` +
          `the payload says ${JSON.stringify(payload[key])}); remove it from the payload`,
      );
    }
    delete payload[key];
  }
}

function contentTypeOf(file: string): string {
  switch (path.extname(file).toLowerCase()) {
    case ".png":
      return "image/png";
    case ".jpg":
    case ".jpeg":
      return "image/jpeg";
    case ".pdf":
      return "application/pdf";
    case ".heic":
      return "image/heic";
    case ".heif":
      return "image/heif";
  }
  return "application/octet-stream";
}

/** A document file, read and checked for size; the service judges its format by its bytes. */
function readDocumentFile(file: string, flag: string): DocumentFile {
  let data: Buffer;
  try {
    const stat = fs.statSync(file);
    if (stat.isDirectory()) throw new UsageError(`${flag} ${file}: is a directory`);
    if (stat.size > documentBytesMax) {
      throw new UsageError(`${flag} ${file}: ${stat.size} bytes, over the 5 MiB a document file may have`);
    }
    data = fs.readFileSync(file);
  } catch (err) {
    if (err instanceof UsageError) throw err;
    throw new UsageError(`cannot read ${flag} ${file}: ${fileErrorReason(err)}`);
  }
  if (data.byteLength === 0) throw new UsageError(`${flag} ${file}: the file is empty`);
  return { data, filename: path.basename(file), contentType: contentTypeOf(file) };
}

export function registerPartnerClientCommands(program: Command, env: Env): void {
  const client = commandGroup(program, "client", clientGroupDescription);

  payloadCommand(client, "create", "onboard a client: verified and active on return", true)
    .addHelpText(
      "after",
      "\nThe fields come from --file/--data (one JSON object of client fields) and/or the field flags; a flag\n" +
        "replaces the payload's value. account_type defaults to personal. Example:\n" +
        "  counterpart client create --file client.json --client user-42 --email user42@example.com",
    )
    .action(
      withGlobalOptions(async (options: PayloadOptions) => {
        const payload = readPayload(options) ?? {};
        if (options.client !== undefined) payload.partner_client_id = options.client;
        applyFieldFlags(payload, options, true);
        payload.account_type ??= "personal";
        const api = partnerApi(options, env);
        // The payload is the caller's: the service checks every field and answers 422 for a bad one.
        const created = await callApi(api, (c) =>
          c.clients.create(payload as unknown as ClientCreateRequest),
        );
        emit(options, { ...created }, () => formatClientRecord(created));
      }),
    );

  partnerCommand(client, "get", "show a client")
    .requiredOption("--client <partner_client_id>", "the client (partner_client_id)")
    .action(
      withGlobalOptions(async (options: PartnerOptions & { client: string }) => {
        const api = partnerApi(options, env);
        const found = await callApi(api, (c) => c.clients.get(options.client));
        emit(options, { ...found }, () => formatClientRecord(found));
      }),
    );

  pageOptions(
    partnerCommand(client, "list", "list the partner's clients, newest first")
      .addOption(new Option("--status <status...>", "only clients in these statuses").choices(clientStatuses))
      .option("--from <datetime>", "created on or after (ISO 8601)")
      .option("--to <datetime>", "created on or before (ISO 8601)"),
    "client",
  ).action(
    withGlobalOptions(
      async (
        options: PartnerOptions &
          PageOptions & { status?: (typeof clientStatuses)[number][]; from?: string; to?: string },
      ) => {
        const api = partnerApi(options, env);
        const filters = {
          ...(options.status === undefined ? {} : { status: options.status }),
          ...(options.from === undefined ? {} : { from_datetime: options.from }),
          ...(options.to === undefined ? {} : { to_datetime: options.to }),
          ...pageParams(options),
        };
        if (options.all) {
          const items = await callApi(api, (c) => collect(c.clients.listAll(filters)));
          emit(options, { items, total: items.length }, () =>
            withFooter(formatClientTable(items), items.length, count(items.length, "client")),
          );
          return;
        }
        const page = await callApi(api, (c) => c.clients.list(filters));
        emit(options, { ...page }, () =>
          withFooter(formatClientTable(page.items), page.items.length, pageFooter(page, "client")),
        );
      },
    ),
  );

  payloadCommand(client, "update", "replace a client's fields (a full replacement; see below)", false)
    .addHelpText(
      "after",
      "\nWithout --file/--data the payload starts from the client's current record, so the flags given\n" +
        "change only their fields. Fields an update cannot change are dropped when they equal the\n" +
        "record's and refused when they differ. Example:\n" +
        "  counterpart client update --client user-42 --email new@example.com --city Abu Dhabi",
    )
    .action(
      withGlobalOptions(async (options: PayloadOptions & { client: string }) => {
        const given = readPayload(options);
        const api = partnerApi(options, env);
        const current = await callApi(api, (c) => c.clients.get(options.client));
        const payload = given ?? updatableFields(current);
        dropUnchangeable(payload, current);
        applyFieldFlags(payload, options, false);
        const updated = await callApi(api, (c) =>
          c.clients.update(options.client, payload as unknown as ClientUpdateRequest),
        );
        emit(options, { ...updated }, () => formatClientRecord(updated));
      }),
    );

  for (const [name, active] of [
    ["activate", true],
    ["deactivate", false],
  ] as const) {
    partnerCommand(
      client,
      name,
      active
        ? "allow the client to trade and be funded again"
        : "block the client's quotes, executions, deposits and withdrawals (error 2010); the record stays",
    )
      .requiredOption("--client <partner_client_id>", "the client (partner_client_id)")
      .action(
        withGlobalOptions(async (options: PartnerOptions & { client: string }) => {
          const api = partnerApi(options, env);
          await callApi(api, (c) => c.clients.setActive(options.client, active));
          emit(options, { partner_client_id: options.client, active }, () =>
            active
              ? `client ${options.client} is active: it can trade and be funded`
              : `client ${options.client} is deactivated: quotes, executions, deposits and withdrawals answer 2010`,
          );
        }),
      );
  }

  const document = program.command("document").description("a client's KYC documents (partner API)");

  partnerCommand(document, "upload", "upload a KYC document (JPEG, PNG, HEIC, HEIF or PDF, 5 MiB a file)")
    .requiredOption("--client <partner_client_id>", "the client (partner_client_id)")
    .addOption(new Option("--type <type>", "document type").choices(documentTypes).makeOptionMandatory())
    .requiredOption("--front <file>", "the front (or only) side")
    .option("--back <file>", "the back side, for two-sided documents")
    .action(
      withGlobalOptions(
        async (
          options: PartnerOptions & {
            client: string;
            type: (typeof documentTypes)[number];
            front: string;
            back?: string;
          },
        ) => {
          const front = readDocumentFile(options.front, "--front");
          const back = options.back === undefined ? undefined : readDocumentFile(options.back, "--back");
          const names = [front, back].flatMap((f) => (f === undefined ? [] : [f.filename]));
          // Progress only on a terminal: never in pipes, logs or the --json stdout.
          const progress = process.stderr.isTTY
            ? new ProgressLine(process.stderr, `uploading ${names.join(" + ")}`)
            : null;
          const api = partnerApi(
            options,
            env,
            progress === null ? {} : { fetch: progressFetch((sent, total) => progress.update(sent, total)) },
          );
          let uploaded: Awaited<ReturnType<typeof api.counterpart.documents.upload>>;
          try {
            uploaded = await callApi(api, (c) =>
              c.documents.upload(options.client, {
                type: options.type,
                front,
                ...(back === undefined ? {} : { back }),
              }),
            );
          } finally {
            progress?.end();
          }
          emit(options, { ...uploaded }, () => formatDocument(uploaded));
        },
      ),
    );

  pageOptions(
    partnerCommand(document, "list", "list a client's documents")
      .requiredOption("--client <partner_client_id>", "the client (partner_client_id)")
      .addOption(new Option("--type <type...>", "only documents of these types").choices(documentTypes)),
    "document",
  ).action(
    withGlobalOptions(
      async (
        options: PartnerOptions & PageOptions & { client: string; type?: (typeof documentTypes)[number][] },
      ) => {
        const api = partnerApi(options, env);
        const filters = {
          ...(options.type === undefined ? {} : { type: options.type }),
          ...pageParams(options),
        };
        if (options.all) {
          const items = await callApi(api, (c) => collect(c.documents.listAll(options.client, filters)));
          emit(options, { items, total: items.length }, () =>
            withFooter(formatDocumentTable(items), items.length, count(items.length, "document")),
          );
          return;
        }
        const page = await callApi(api, (c) => c.documents.list(options.client, filters));
        emit(options, { ...page }, () =>
          withFooter(formatDocumentTable(page.items), page.items.length, pageFooter(page, "document")),
        );
      },
    ),
  );

  partnerCommand(document, "get", "show a document with fresh download links (valid 900 s)")
    .argument("<id>", "document id")
    .requiredOption("--client <partner_client_id>", "the client (partner_client_id)")
    .action(
      withGlobalOptions(async (id: string, options: PartnerOptions & { client: string }) => {
        const documentId = positiveId(id, "the document id");
        const api = partnerApi(options, env);
        const found = await callApi(api, (c) => c.documents.get(options.client, documentId));
        emit(options, { ...found }, () => formatDocument(found));
      }),
    );
}
