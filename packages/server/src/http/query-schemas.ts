// Query-string pieces shared by the paginated lists: page bounds (docs/reference.md §8) and ISO 8601
// datetimes (a datetime without an offset is read as UTC).

import { Type } from "typebox";
import { limits } from "../config/limits.ts";
import { validationError } from "./http-error.ts";

export const PageQuery = {
  page: Type.Optional(Type.Integer({ minimum: 1, maximum: 1_000_000, default: 1 })),
  page_size: Type.Optional(
    Type.Integer({ minimum: 1, maximum: limits.pageSizeMax, default: limits.pageSizeDefault }),
  ),
};

const datetimePattern =
  "^\\d{4}-\\d{2}-\\d{2}(?:[Tt ]\\d{2}:\\d{2}(?::\\d{2}(?:\\.\\d{1,6})?)?(?:[Zz]|[+-]\\d{2}:?\\d{2})?)?$";

/** An ISO 8601 date or datetime in a query string. */
export const DatetimeQuery = Type.String({
  pattern: datetimePattern,
  "x-error": { type: "datetime_from_date_parsing", msg: "Input should be a valid datetime" },
});

/**
 * A query datetime as PostgreSQL timestamptz text in UTC, or null when it is not a real instant
 * (e.g. a 30th of February). Without an offset the value is UTC; with one (ISO 8601 allows up to
 * ±23:59) it is moved to UTC here, since PostgreSQL refuses a displacement past ±15:59 (a 500 until
 * 30 November). Microseconds are kept.
 */
export function queryDatetime(value: string): string | null {
  const m =
    /^(\d{4})-(\d{2})-(\d{2})(?:[Tt ](\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,6}))?)?([Zz]|[+-]\d{2}:?\d{2})?)?$/.exec(
      value,
    );
  if (m === null) return null;
  const [, y, mo, d, h = "00", mi = "00", s = "00", frac = "", zone = "Z"] = m;
  const year = Number(y);
  const month = Number(mo);
  const day = Number(d);
  const date = new Date(Date.UTC(year, month - 1, day));
  if (date.getUTCFullYear() !== year || date.getUTCMonth() !== month - 1 || date.getUTCDate() !== day)
    return null;
  if (Number(h) > 23 || Number(mi) > 59 || Number(s) > 59) return null;
  const offset = zone.toUpperCase() === "Z" ? "+0000" : zone.replace(":", "");
  const offsetHours = Number(offset.slice(1, 3));
  const offsetMinutes = Number(offset.slice(3, 5));
  if (offsetHours > 23 || offsetMinutes > 59) return null;
  const east = (offset.startsWith("-") ? -1 : 1) * (offsetHours * 60 + offsetMinutes);
  // Years below 100 never get here (Date.UTC reads them as 19xx, refused above); the instant may
  // still fall in year 99 or 10000, which PostgreSQL reads as written.
  const utc = new Date(date.getTime() + ((Number(h) * 60 + Number(mi) - east) * 60 + Number(s)) * 1000);
  const two = (n: number) => String(n).padStart(2, "0");
  return (
    `${String(utc.getUTCFullYear()).padStart(4, "0")}-${two(utc.getUTCMonth() + 1)}-${two(utc.getUTCDate())} ` +
    `${two(utc.getUTCHours())}:${two(utc.getUTCMinutes())}:${two(utc.getUTCSeconds())}.${frac.padEnd(6, "0")}+00:00`
  );
}

/** A from/to datetime query parameter as timestamptz text; a 422 at ["query", name] when unreadable. */
export function datetimeParam(name: string, value: string | undefined): string | null {
  if (value === undefined) return null;
  const parsed = queryDatetime(value);
  if (parsed === null) {
    throw validationError([
      { loc: ["query", name], msg: "Input should be a valid datetime", type: "datetime_from_date_parsing" },
    ]);
  }
  return parsed;
}
