// PostgreSQL prints timestamptz in the session's zone, which both drivers set to UTC, as
// "2026-11-21 09:30:00.123456+00". The wire wants ISO 8601 with a Z and microseconds kept.

export function isoFromPg(text: string): string {
  const m = /^(\d{4}-\d{2}-\d{2})[ T](\d{2}:\d{2}:\d{2})(?:\.(\d{1,6}))?(?:\+00(?::00)?|Z)$/.exec(text);
  if (m === null) throw new Error(`unexpected timestamp text from the database: ${text}`);
  return `${m[1]}T${m[2]}.${(m[3] ?? "").padEnd(6, "0")}Z`;
}

/** ISO text for a millisecond instant, at the database's microsecond precision. */
export function isoFromMs(ms: number): string {
  return new Date(ms).toISOString().replace("Z", "000Z");
}
