// Every paginated list is also an async iterator over all its pages (docs/reference.md §8): each page is its own
// signed request with a fresh timestamp, and the last page is derived from the `total` of each
// response, since records can appear between pages (a listing is not a snapshot).

import { limits } from "./config.ts";
import type { Page, PageParams } from "./types.ts";

/** Checks page bounds before a request (docs/reference.md §8): page ≥ 1, page_size 1..100. */
export function checkPageParams(params: PageParams): void {
  const { page, page_size } = params;
  if (page !== undefined && (!Number.isSafeInteger(page) || page < 1 || page > limits.pageMax)) {
    throw new RangeError(`page must be an integer from 1 to ${limits.pageMax}, got ${String(page)}`);
  }
  if (
    page_size !== undefined &&
    (!Number.isSafeInteger(page_size) || page_size < 1 || page_size > limits.pageSizeMax)
  ) {
    throw new RangeError(
      `page_size must be an integer from 1 to ${limits.pageSizeMax}, got ${String(page_size)}`,
    );
  }
}

/**
 * Yields every item from `params.page` (default 1) to the last page, asking for `params.page_size`
 * items a page (default 100, the maximum). Stops at the page that `total` makes the last, or at an
 * empty page, whichever comes first; never asks past the service's page bound.
 */
export async function* paginate<T>(
  params: PageParams,
  fetchPage: (page: number, pageSize: number) => Promise<Page<T>>,
): AsyncGenerator<T, void, undefined> {
  checkPageParams(params);
  const pageSize = params.page_size ?? limits.pageSizeMax;
  for (let page = params.page ?? 1; page <= limits.pageMax; page++) {
    const result = await fetchPage(page, pageSize);
    yield* result.items;
    const size = result.page_size > 0 ? result.page_size : pageSize;
    const lastPage = Math.ceil(result.total / size);
    if (result.items.length === 0 || page >= lastPage) return;
  }
}
