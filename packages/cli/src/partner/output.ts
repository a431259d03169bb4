// The partner commands' human output: one record as "key: value" lines, lists as tables. Amounts
// are shown exactly as the service returned them (which may be scientific notation, e.g. "0E-8");
// with --plain they are written in plain notation with all 8 decimals by the SDK's toMoney and
// fromMoney, which never round. --json never goes through here: it prints the service's values.

import type { Balance, Client, ClientDocument, Order, Page, Quote } from "@counterpart/sdk";
import { fromMoney, toMoney } from "@counterpart/sdk";
import { clean, formatRecord, formatTable } from "../common/output.ts";

export interface AmountOptions {
  plain?: boolean | undefined;
}

/** An amount as returned, or in plain notation with --plain; "-" for null. */
export function amount(value: string | null, options: AmountOptions): string {
  if (value === null) return "-";
  if (!options.plain) return value;
  try {
    return fromMoney(toMoney(value), { notation: "plain" });
  } catch {
    // Not a decimal the SDK can hold exactly at scale 8: shown as it came, never rounded.
    return value;
  }
}

function withAsset(value: string | null, asset: string | null, options: AmountOptions): string {
  if (value === null) return "-";
  return asset === null ? amount(value, options) : `${amount(value, options)} ${asset}`;
}

// --- Clients ---

export function formatClientRecord(c: Client): string {
  const e = c.employment;
  const employment = [
    e.status,
    ...[e.job_title, e.job_level, e.company, e.job_industry].filter((v): v is string => v !== null),
  ].join(", ");
  const visa =
    c.residency_visa_number === null
      ? "(none)"
      : `${c.residency_visa_number}, expires ${c.residency_visa_doe ?? "(unknown)"}`;
  return formatRecord([
    ["partner_client_id", c.partner_client_id],
    ["id", String(c.id)],
    ["name", c.name ?? "(none)"],
    ["account_type", c.account_type],
    ["status", c.status],
    ["active", String(c.active)],
    ["email", c.email],
    ["phone", c.phone],
    ["birth_date", c.birth_date],
    ["place_of_birth", c.place_of_birth_id],
    ["residency", c.residency_id],
    ["citizenship", c.citizenship_id],
    ["national_number", c.national_number ?? "(none)"],
    ["government_id", `${c.government_id_number}, expires ${c.government_id_doe}`],
    ["residency_visa", visa],
    ["address", `${c.address.unit}, ${c.address.street}, ${c.address.city} ${c.address.postal_code}`],
    ["employment", employment],
    ["trading_volume", c.trading_volume],
    ["account_purpose", c.account_purpose.join(", ")],
    ["created_at", c.created_at],
    ["verified_at", c.verified_at ?? "(not verified)"],
  ]);
}

export function formatClientTable(items: readonly Client[]): string {
  return formatTable(
    ["PARTNER_CLIENT_ID", "NAME", "STATUS", "ACTIVE", "EMAIL", "CREATED_AT"],
    items.map((c) => [
      c.partner_client_id,
      c.name ?? "",
      c.status,
      c.active ? "yes" : "no",
      c.email,
      c.created_at,
    ]),
  );
}

// --- Documents ---

export function formatDocument(d: ClientDocument): string {
  return formatRecord([
    ["id", String(d.id)],
    ["type", d.type],
    ["created_at", d.created_at],
    ["front_file", d.front_file],
    ["back_file", d.back_file ?? "(none)"],
  ]);
}

export function formatDocumentTable(items: readonly ClientDocument[]): string {
  return formatTable(
    ["ID", "TYPE", "SIDES", "CREATED_AT"],
    items.map((d) => [String(d.id), d.type, d.back_file === null ? "front" : "front+back", d.created_at]),
  );
}

// --- Orders ---

export function formatOrder(o: Order, options: AmountOptions, extra: [string, string][] = []): string {
  return formatRecord([
    ["id", String(o.id)],
    ["order_no", o.order_no],
    ["partner_order_ref", o.partner_order_ref ?? "(none)"],
    ["partner_client_id", o.partner_client_id],
    ["type", o.type],
    ["source", o.source],
    ["status", o.status],
    ["price", amount(o.price, options)],
    ["debit", withAsset(o.debit, o.debit_asset_id, options)],
    ["credit", withAsset(o.credit, o.credit_asset_id, options)],
    ["fee", withAsset(o.fee, o.fee_asset_id, options)],
    ["vat", amount(o.vat, options)],
    ["created_at", o.created_at],
    ["transitioned_at", o.transitioned_at],
    ...extra,
  ]);
}

export function formatOrderTable(items: readonly Order[], options: AmountOptions): string {
  return formatTable(
    ["ID", "ORDER_NO", "REF", "CLIENT", "TYPE", "STATUS", "DEBIT", "CREDIT", "PRICE", "FEE", "CREATED_AT"],
    items.map((o) => [
      String(o.id),
      o.order_no,
      o.partner_order_ref ?? "-",
      o.partner_client_id,
      o.type,
      o.status,
      withAsset(o.debit, o.debit_asset_id, options),
      withAsset(o.credit, o.credit_asset_id, options),
      amount(o.price, options),
      withAsset(o.fee, o.fee_asset_id, options),
      o.created_at,
    ]),
  );
}

// --- Balances and quotes ---

export function formatBalance(b: Balance, options: AmountOptions): string {
  return formatRecord([
    ["asset", b.asset_id],
    ["balance", amount(b.balance, options)],
    ["available_balance", amount(b.available_balance, options)],
    ["balance_usd", amount(b.balance_usd, options)],
    ["available_balance_usd", amount(b.available_balance_usd, options)],
  ]);
}

export function formatBalanceTable(items: readonly Balance[], options: AmountOptions): string {
  return formatTable(
    ["ASSET", "BALANCE", "AVAILABLE", "BALANCE_USD", "AVAILABLE_USD"],
    items.map((b) => [
      b.asset_id,
      amount(b.balance, options),
      amount(b.available_balance, options),
      amount(b.balance_usd, options),
      amount(b.available_balance_usd, options),
    ]),
  );
}

export function formatQuote(
  q: Quote,
  request: { client: string; pair: string; side: string },
  options: AmountOptions,
): string {
  const [base = "", quoteAsset = ""] = request.pair.split("-");
  const record = formatRecord([
    ["pair", request.pair],
    ["side", request.side],
    ["market_price", amount(q.market_price, options)],
    ["base_amount", `${amount(q.base_amount, options)} ${base}`],
    ["quote_amount", `${amount(q.quote_amount, options)} ${quoteAsset}`],
    ["fee_amount", amount(q.fee_amount, options)],
    ["vat_percentage", q.vat_percentage === null ? "(none)" : amount(q.vat_percentage, options)],
    ["vat_amount", amount(q.vat_amount, options)],
    ["lifetime", `${q.lifetime} s`],
    ["token", q.token ?? "(none)"],
  ]);
  if (q.token === null) return record;
  return `${record}\n\nexecute it within ${q.lifetime} s: ${clean(`counterpart execute --client ${request.client} --token ${q.token}`)}`;
}

/** "1 order", "25 orders". */
export function count(n: number, noun: string): string {
  return `${n} ${noun}${n === 1 ? "" : "s"}`;
}

/** "page 2 of 3 (25 orders in all)", or "no orders". */
export function pageFooter(page: Page<unknown>, noun: string): string {
  if (page.total === 0) return `no ${noun}s`;
  const pages = Math.max(1, Math.ceil(page.total / Math.max(1, page.page_size)));
  return `page ${page.page} of ${pages} (${count(page.total, noun)} in all)`;
}

/** A table with a footer line, or only the footer for an empty list. */
export function withFooter(table: string, count: number, footer: string): string {
  return count === 0 ? footer : `${table}\n${footer}`;
}
