// Orders (docs/reference.md §4.5): by numeric id, by the partner's reference, and listed with filters.

import { fetchOrderByRef } from "../order-recovery.ts";
import { checkPageParams, paginate } from "../pagination.ts";
import type { RequestOptions, RequestSender } from "../request-sender.ts";
import { pageOf, resultOf } from "../responses.ts";
import type { Order, OrderListParams, Page, WithResponse } from "../types.ts";

export class Orders {
  readonly #sender: RequestSender;
  constructor(sender: RequestSender) {
    this.#sender = sender;
  }

  /** GET /v1/partner/orders/{order_id}. Throws NotFoundError if absent or of another partner. */
  async get(orderId: number, options: RequestOptions = {}): Promise<WithResponse<Order>> {
    if (!Number.isSafeInteger(orderId) || orderId < 1) {
      throw new RangeError(`orderId must be a positive integer (the order's id), got ${String(orderId)}`);
    }
    const response = await this.#sender.send(
      { method: "GET", path: `/v1/partner/orders/${orderId}`, signed: true, replaySafe: true },
      options,
    );
    return resultOf<Order>(response);
  }

  /** GET /v1/partner/orders/ref/{partner_order_ref}. Throws NotFoundError if no order has it. */
  getByRef(partnerOrderRef: string, options: RequestOptions = {}): Promise<WithResponse<Order>> {
    return fetchOrderByRef(this.#sender, partnerOrderRef, options);
  }

  /** GET /v1/partner/orders: one page, newest first. Errors: 422 (filters, bounds), 2008. */
  async list(
    params: OrderListParams = {},
    options: RequestOptions = {},
  ): Promise<WithResponse<Page<WithResponse<Order>>>> {
    checkPageParams(params);
    const response = await this.#sender.send(
      {
        method: "GET",
        path: "/v1/partner/orders",
        query: {
          partner_client_id: params.partner_client_id,
          source: params.source,
          status: params.status,
          from_datetime: params.from_datetime,
          to_datetime: params.to_datetime,
          page: params.page,
          page_size: params.page_size,
        },
        signed: true,
        replaySafe: true,
      },
      options,
    );
    return pageOf<Order>(response);
  }

  /**
   * Every order matching the filters, page after page from `params.page` (default 1), 100 a page
   * unless `page_size` says otherwise: `for await (const order of client.orders.listAll({...}))`.
   */
  listAll(
    params: OrderListParams = {},
    options: RequestOptions = {},
  ): AsyncGenerator<WithResponse<Order>, void, undefined> {
    return paginate(params, (page, page_size) => this.list({ ...params, page, page_size }, options));
  }
}
