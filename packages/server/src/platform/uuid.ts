// The one UUID pattern. Case rule: UUIDs are written in lower case, as Random.uuid() makes them
// and PostgreSQL prints them, so the pattern is lower case only; a caller that accepts either case
// (the signed X-Partner-Id header, which PostgreSQL would match case-insensitively) lowers the text
// first and says so.

const uuidPattern = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** A UUID in its canonical, lower-case form. */
export function isUuid(text: string): boolean {
  return uuidPattern.test(text);
}
