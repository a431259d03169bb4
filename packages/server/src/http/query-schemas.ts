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
 * A query datetime as PostgreSQL timestamptz text, or null when it is not a real instant (e.g. a
 * 30th of February). Offsets are kept; without one the value is UTC. Microseconds are kept.
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
  const offset =
    zone.toUpperCase() === "Z"
      ? "+00:00"
      : zone.includes(":")
        ? zone
        : `${zone.slice(0, 3)}:${zone.slice(3)}`;
  if (Number(offset.slice(1, 3)) > 23 || Number(offset.slice(4, 6)) > 59) return null;
  return `${y}-${mo}-${d} ${h}:${mi}:${s}.${frac.padEnd(6, "0")}${offset}`;
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
