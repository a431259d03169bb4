// How results reach stdout, for both command lines: with --json exactly one JSON object; otherwise
// a small aligned table for lists and "key: value" lines for one record. Text that came from the
// service is shown with control characters escaped, so a partner name cannot rewrite the terminal.
// The records themselves are formatted by operator/admin-output.ts and partner/output.ts.

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
