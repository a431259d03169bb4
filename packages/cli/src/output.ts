// How results reach stdout: with --json exactly one JSON object; otherwise a small aligned table
// for lists and "key: value" lines for one record. Text that came from the service is shown with
// control characters escaped, so a partner name cannot rewrite the operator's terminal.

import type {
  AdminAsset,
  AdminPair,
  AdminPartner,
  AdminPartnerFees,
  AdminPartnerPair,
  LedgerDifference,
} from "./admin-client.ts";

export interface OutputOptions {
  json?: boolean | undefined;
}

/** Prints `value` as one JSON object with --json, else the human form `human()` gives. */
export function emit(options: OutputOptions, value: Record<string, unknown>, human: () => string): void {
  if (options.json) printJson(value);
  else process.stdout.write(human().replace(/\n*$/, "\n"));
}

export function printJson(value: Record<string, unknown>): void {
  process.stdout.write(`${JSON.stringify(value, null, 2)}\n`);
}

// biome-ignore lint/suspicious/noControlCharactersInRegex: escaping control characters is the point
const controlChars = /[\u0000-\u001f\u007f-\u009f\u2028\u2029]/g;

/** One line of terminal-safe text. */
export function clean(text: string): string {
  return text.replace(controlChars, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`);
}

/** "key: value" lines with the values aligned. */
export function formatRecord(pairs: readonly (readonly [string, string])[]): string {
  const width = Math.max(0, ...pairs.map(([k]) => k.length)) + 1;
  return pairs.map(([k, v]) => `${`${k}:`.padEnd(width)} ${clean(v)}`).join("\n");
}

/** A table: a header row, then one row per item, columns separated by two spaces. */
export function formatTable(headers: readonly string[], rows: readonly (readonly string[])[]): string {
  const cells = rows.map((r) => r.map(clean));
  const widths = headers.map((h, i) => Math.max(h.length, ...cells.map((r) => (r[i] ?? "").length)));
  const line = (r: readonly string[]) =>
    r
      .map((c, i) => (i === r.length - 1 ? c : c.padEnd(widths[i] ?? 0)))
      .join("  ")
      .trimEnd();
  return [line(headers), ...cells.map(line)].join("\n");
}

/** The base64 body of a PEM on one line (enough to recognise a key), or "(none)". */
export function pemSummary(pem: string | null): string {
  if (pem === null) return "(none)";
  return pem
    .replace(/-----(BEGIN|END) [A-Z ]+-----/g, "")
    .replace(/\s+/g, "")
    .trim();
}

export function formatPartner(p: AdminPartner): string {
  return formatRecord([
    ["id", p.id],
    ["name", p.name],
    ["active", String(p.active)],
    ["public_key", pemSummary(p.public_key_pem)],
    ["allowed_ips", p.allowed_ips.length === 0 ? "(none)" : p.allowed_ips.join(", ")],
    ["created_at", p.created_at],
    ["updated_at", p.updated_at],
  ]);
}

export function formatPartnerTable(items: readonly AdminPartner[]): string {
  if (items.length === 0) return "no partners";
  return formatTable(
    ["ID", "NAME", "ACTIVE", "KEY", "ALLOWED IPS"],
    items.map((p) => [
      p.id,
      p.name,
      p.active ? "yes" : "no",
      p.has_public_key ? "yes" : "no",
      p.allowed_ips.length === 0 ? "(none)" : p.allowed_ips.join(","),
    ]),
  );
}

export function formatAsset(a: AdminAsset, created: boolean): string {
  return formatRecord([
    ["id", a.id],
    ["type", a.type],
    ["name", a.name_en],
    ["decimal_places", String(a.decimal_places)],
    ["published", String(a.published)],
    ["depositable", String(a.depositable)],
    ["withdrawable", String(a.withdrawable)],
    ["created", String(created)],
  ]);
}

export function formatPair(p: AdminPair): string {
  return formatRecord([
    ["id", p.id],
    ["tradable", String(p.tradable)],
    ["buy", p.buy],
    ["sell", p.sell],
    ["prices", p.price_pinned ? "pinned (set by hand)" : "from the feed"],
    ["price_at", p.price_at],
    ["min_volume", p.min_volume],
    ["max_volume", p.max_volume],
    ["lifetime_s", String(p.lifetime_s)],
    ["fee_rate", p.fee_rate],
  ]);
}

export function formatPartnerPair(p: AdminPartnerPair): string {
  return formatRecord([
    ["partner", p.partner_id],
    ["pair", p.pair_id],
    ["available", String(p.available)],
    ["fee_rate", p.fee_rate ?? "(the partner's default, else the pair's)"],
  ]);
}

export function formatPartnerFees(partnerId: string, f: AdminPartnerFees): string {
  return formatRecord([
    ["partner", partnerId],
    ["fee_rate", f.fee_rate ?? "(each pair's own rate)"],
    ["vat_percentage", f.vat_percentage ?? "(none)"],
  ]);
}

/** One line per difference: the account or order it concerns, then the recorded and posted figures. */
export function formatLedgerDifferences(differences: readonly LedgerDifference[]): string {
  return differences.map((d) => clean(ledgerLine(d))).join("\n");
}

function ledgerLine(d: LedgerDifference): string {
  const recorded = d.recorded ?? "0";
  const posted = d.from_postings ?? "0";
  switch (d.kind) {
    case "account_balance":
      return `account ${d.account ?? `#${d.account_id}`}: recorded ${recorded}, from postings ${posted}`;
    case "order_unbalanced":
      return `order ${d.order_id} ${d.asset_id}: recorded 0, from postings ${posted} (an order's postings sum to 0)`;
    case "asset_unbalanced":
      return `asset ${d.asset_id}: account balances sum to ${recorded}, not 0`;
  }
  return `${d.kind}: ${JSON.stringify(d)}`;
}
