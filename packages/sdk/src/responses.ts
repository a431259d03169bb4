// The envelope of a success response (spec §4 conventions): `{result}` for one record, `{items}` for
// a plain list, `{items, total, page, page_size}` for a page. The envelope is checked, so a wrong
// baseUrl or a proxy's page fails here with a clear message; the records inside are trusted to be
// the documented shapes (the service validates them against its schemas before sending).

import { CounterpartError } from "./errors.ts";
import type { ApiResponse } from "./request-sender.ts";
import type { Page } from "./types.ts";

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function unexpected(response: ApiResponse, expected: string): CounterpartError {
  const { info } = response;
  return new CounterpartError(
    `${info.method} ${info.target}: HTTP ${response.status} without the expected ${expected}; ` +
      "check that baseUrl points at the Counterpart partner API",
    { ...info, status: response.status, code: null, msg: null, msgDetail: response.body },
  );
}

export function resultOf<T>(response: ApiResponse): T {
  const body = response.body;
  if (!isRecord(body) || !isRecord(body.result)) throw unexpected(response, "{result: …} body");
  return body.result as T;
}

export function itemsOf<T>(response: ApiResponse): T[] {
  const body = response.body;
  if (!isRecord(body) || !Array.isArray(body.items)) throw unexpected(response, "{items: […]} body");
  return body.items as T[];
}

export function pageOf<T>(response: ApiResponse): Page<T> {
  const body = response.body;
  if (
    !isRecord(body) ||
    !Array.isArray(body.items) ||
    !Number.isSafeInteger(body.total) ||
    !Number.isSafeInteger(body.page) ||
    !Number.isSafeInteger(body.page_size)
  ) {
    throw unexpected(response, "{items, total, page, page_size} body");
  }
  return {
    items: body.items as T[],
    total: body.total as number,
    page: body.page as number,
    page_size: body.page_size as number,
  };
}
