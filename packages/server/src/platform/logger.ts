// pino JSON logs. Secrets and client personal data are redacted wherever they appear in a logged
// object, as a second line of defence: request bodies are never logged.
//
// Redaction is one walk of the logged object (pino's `formatters.log`, before the serializers),
// not pino's `redact` paths: to cover a key at any of the first levels, `redact` needs a wildcard
// path per key and depth (60 here), and applying them cost about 200 µs per request on the
// request's two log lines, against about 12 µs for the lines themselves
// (docs/decisions.md, "Logging"). The walk enters plain objects, arrays and errors (through
// pino's error serializer, as the log would show them) and leaves other instances to their
// serializers: a request or a reply is logged by its serializer as a few fixed fields (method,
// path and the query's names, address; status code), never its headers or its query's values.

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

/** A query parameter's name logged as it is: a plain word, not a value sent in its place. */
const plainName = /^[A-Za-z_][A-Za-z0-9_.[\]-]{0,63}$/;

/**
 * A request target as logged: its path, and its query with every value censored. A query carries
 * what the request is about, and sometimes personal data or a credential: a console search (an
 * e-mail, a phone, an ID number), an operator's sign-in link token, a document link's signature
 * (the link is the credential while it lasts), a partner's client id.
 */
export function loggedTarget(url: string): string {
  const q = url.indexOf("?");
  if (q === -1) return url;
  const query = url
    .slice(q + 1)
    .split("&")
    .map((pair) => {
      const eq = pair.indexOf("=");
      const name = eq === -1 ? pair : pair.slice(0, eq);
      if (!plainName.test(name)) return censor;
      return eq === -1 ? name : `${name}=${censor}`;
    });
  return `${url.slice(0, q)}?${query.join("&")}`;
}

interface LoggedRequest {
  method?: string;
  url?: string;
  host?: string;
  ip?: string;
  socket?: { remotePort?: number };
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
      serializers: {
        err: (value: unknown) => (value instanceof Error ? redact(value) : value),
        // Fastify's own, but with the query's values censored (loggedTarget); this one wins over
        // Fastify's in its request loggers.
        req: (req: LoggedRequest) => ({
          method: req.method,
          url: typeof req.url === "string" ? loggedTarget(req.url) : req.url,
          host: req.host,
          remoteAddress: req.ip,
          remotePort: req.socket?.remotePort,
        }),
      },
      base: { pid: process.pid },
      timestamp: isoTimestamp,
    },
    destination,
  );
}
