// Trading in two steps (docs/reference.md §4.3): a quote, then its execution into an order.

import { createOrder } from "../order-recovery.ts";
import type { RequestOptions, RequestSender } from "../request-sender.ts";
import { resultOf } from "../responses.ts";
import type { ExecuteRequest, OrderResult, Quote, QuoteRequest, WithResponse } from "../types.ts";

export class Quotes {
  readonly #sender: RequestSender;
  constructor(sender: RequestSender) {
    this.#sender = sender;
  }

  /**
   * POST /v1/partner/quotes. The quote holds a token valid for `lifetime` seconds.
   * Errors: 422; 2008, 2009, 2010, 2013; 3005, 4000, 4001, 4003, 4004 (ApiError with `quote`, and
   * `limit` for 4003/4004).
   */
  async create(request: QuoteRequest, options: RequestOptions = {}): Promise<WithResponse<Quote>> {
    // Sending a quote request twice creates nothing: the unused token just expires.
    const response = await this.#sender.send(
      { method: "POST", path: "/v1/partner/quotes", json: request, signed: true, replaySafe: true },
      options,
    );
    return resultOf<Quote>(response);
  }

  /**
   * POST /v1/partner/quotes/execute: the order, final on return (`completed`, or `rejected` when
   * the funds were gone by execution time). With a partner_order_ref, a 2020 is resolved by
   * fetching the order (see OrderResult.replayed; OrderRefFailedError for a failed or rejected one),
   * and a timeout or lost connection is retried safely. Without one, a lost response cannot be
   * recovered and is not retried: the token is single-use, so a second copy would answer 4008.
   * Errors: 422; 2008, 2009, 2010, 2020, 4008.
   */
  async execute(request: ExecuteRequest, options: RequestOptions = {}): Promise<WithResponse<OrderResult>> {
    const ref = request.partner_order_ref;
    return createOrder(
      this.#sender,
      {
        method: "POST",
        path: "/v1/partner/quotes/execute",
        json: request,
        signed: true,
        replaySafe: ref !== undefined,
      },
      ref === undefined
        ? null
        : { partnerOrderRef: ref, partnerClientId: request.partner_client_id, types: ["buy", "sell"] },
      options,
    );
  }
}
