// pino JSON logs. Secrets and client personal data are redacted wherever they appear in a logged
// object, as a second line of defence: request bodies are never logged.
//
// Redaction is one walk of the logged object (pino's `formatters.log`, before the serializers),
// not pino's `redact` paths: to cover a key at any of the first levels, `redact` needs a wildcard
// path per key and depth (60 here), and applying them cost about 200 µs per request on the
// request's two log lines, against about 12 µs for the lines themselves
// (docs/decisions.md, "Logging"). The walk enters plain objects, arrays and errors (through
// pino's error serializer, as the log would show them) and leaves other instances to their
// serializers: a request or a reply is logged by Fastify's serializers as a few fixed fields
// (method, url, address; status code), never its headers.

import pino, { type Logger } from "pino";
import type { LogLevel } from "../config/config.ts";

export const sensitiveKeys: ReadonlySet<string> = new Set([
  "authorization",
  "x-signature",
  "admin_token",
  "adminToken",
  "private_key",
  "privateKey",
  "token",
  "name",
  "email",
  "phone",
  "birth_date",
  "government_id_number",
  "national_number",
  "residency_visa_number",
  "address",
]);

export const censor = "[redacted]";

/** Levels walked below the logged object; deeper values are logged as they are. */
const depthMax = 8;

function isPlain(value: object): boolean {
  const proto = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}

/**
 * The value with every sensitive key's value replaced by the censor, at any depth up to
 * `depthMax`. Copy on write: what holds nothing to redact is returned as it is, and the caller's
 * object is never changed.
 */
export function redact(value: unknown, depth = 0): unknown {
  if (value === null || typeof value !== "object" || depth > depthMax) return value;
  if (Array.isArray(value)) {
    let out: unknown[] | null = null;
    for (let i = 0; i < value.length; i++) {
      const v = redact(value[i], depth + 1);
      if (v !== value[i]) {
        out ??= value.slice();
        out[i] = v;
      }
    }
    return out ?? value;
  }
  // The error serializer's result (message, stack, cause, the error's own fields) is not a plain
  // object: it is walked as one.
  if (value instanceof Error) return redactRecord(pino.stdSerializers.err(value), depth);
  if (!isPlain(value)) return value;
  return redactRecord(value as Record<string, unknown>, depth);
}

function redactRecord(record: Record<string, unknown>, depth: number): Record<string, unknown> {
  let out: Record<string, unknown> | null = null;
  for (const key of Object.keys(record)) {
    const v = record[key];
    const next = sensitiveKeys.has(key) ? (v === undefined ? v : censor) : redact(v, depth + 1);
    if (next !== v) {
      out ??= { ...record };
      out[key] = next;
    }
  }
  return out ?? record;
}

/** The second whose ISO text (to the second) isoTimeOf() last made, and that text. */
let isoSecond = Number.NaN;
let isoPrefix = "";

/**
 * `new Date(ms).toISOString()`, its text up to the second made once per second: every line of the
 * log carries its time, and a Date made and printed for each cost about 0.8 µs a line against 0.08
 * (docs/decisions.md, "Logging"). Exact for any instant from 1970 to 9999, which a log's time is.
 */
export function isoTimeOf(ms: number): string {
  const second = Math.floor(ms / 1000);
  if (second !== isoSecond) {
    isoPrefix = new Date(second * 1000).toISOString().slice(0, 19);
    isoSecond = second;
  }
  const milli = ms - second * 1000;
  return `${isoPrefix}.${milli < 10 ? "00" : milli < 100 ? "0" : ""}${milli}Z`;
}

/** pino's `timestamp`: the line's time as ISO 8601 in UTC, as pino.stdTimeFunctions.isoTime writes it. */
const isoTimestamp = () => `,"time":"${isoTimeOf(Date.now())}"`;

export function createLogger(level: LogLevel, destination?: pino.DestinationStream): Logger {
  return pino(
    {
      level,
      formatters: { log: (object) => redact(object) as Record<string, unknown> },
      // An error under `err` reaches the serializers already serialized (and redacted) by the
      // walk; pino's own error serializer would take that record for an error again and log it
      // as an "Object". This one (which Fastify's loggers keep over theirs) leaves it as it is.
      serializers: { err: (value: unknown) => (value instanceof Error ? redact(value) : value) },
      base: { pid: process.pid },
      timestamp: isoTimestamp,
    },
    destination,
  );
}
