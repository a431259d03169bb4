// The envelope of a success response (docs/reference.md §1.1): `{result}` for one record, `{items}` for
// a plain list, `{items, total, page, page_size}` for a page. The envelope is checked, so a wrong
// baseUrl or a proxy's page fails here with a clear message; the records inside are trusted to be
// the documented shapes (the service validates them against its schemas before sending).
//
// Every object the SDK returns carries `lastResponse` (the X-Request-Id, status, method and target
// of the request that produced it), as a non-enumerable property: JSON.stringify, spreading and
// deep equality see only the record itself.

import { CounterpartError } from "./errors.ts";
import type { ApiResponse } from "./request-sender.ts";
import type { Page, ResponseInfo, WithResponse } from "./types.ts";

/** The response facts of `response`, for `lastResponse`. */
export function responseInfo(response: ApiResponse): ResponseInfo {
  const { method, target, requestId } = response.info;
  return Object.freeze({ requestId, status: response.status, method, target });
}

/** Attaches `info` to `value` as its non-enumerable, read-only `lastResponse`. */
export function withResponse<T extends object>(value: T, info: ResponseInfo): WithResponse<T> {
  Object.defineProperty(value, "lastResponse", { value: info, enumerable: false, configurable: true });
  return value as WithResponse<T>;
}

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

export function resultOf<T extends object>(response: ApiResponse): WithResponse<T> {
  const body = response.body;
  if (!isRecord(body) || !isRecord(body.result)) throw unexpected(response, "{result: …} body");
  return withResponse(body.result as T, responseInfo(response));
}

export function itemsOf<T extends object>(response: ApiResponse): WithResponse<WithResponse<T>[]> {
  const body = response.body;
  if (!isRecord(body) || !Array.isArray(body.items)) throw unexpected(response, "{items: […]} body");
  const info = responseInfo(response);
  const items = (body.items as T[]).map((item) => (isRecord(item) ? withResponse(item, info) : item));
  return withResponse(items as WithResponse<T>[], info);
}

export function pageOf<T extends object>(response: ApiResponse): WithResponse<Page<WithResponse<T>>> {
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
  const info = responseInfo(response);
  const items = (body.items as T[]).map((item) => (isRecord(item) ? withResponse(item, info) : item));
  return withResponse(
    {
      items: items as WithResponse<T>[],
      total: body.total as number,
      page: body.page as number,
      page_size: body.page_size as number,
    },
    info,
  );
}
