// How results reach stdout: with --json exactly one JSON object; otherwise a small aligned table
// for lists and "key: value" lines for one record. Text that came from the service is shown with
// control characters escaped, so a partner name cannot rewrite the operator's terminal.

import type { AdminPartner } from "./admin-client.ts";

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
