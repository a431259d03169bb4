// Fiat funding (docs/reference.md §4.4): deposits and withdrawals, each one order, completed on return. The
// required partner_order_ref makes both safe to send again; a 2020 is resolved by fetching the
// order the reference names (see order-recovery.ts).

import { createOrder } from "../order-recovery.ts";
import type { RequestOptions, RequestSender } from "../request-sender.ts";
import type { FundingRequest, OrderResult, WithResponse } from "../types.ts";

function fund(
  sender: RequestSender,
  kind: "deposit" | "withdrawal",
  request: FundingRequest,
  options: RequestOptions,
): Promise<WithResponse<OrderResult>> {
  return createOrder(
    sender,
    {
      method: "POST",
      path: kind === "deposit" ? "/v1/partner/deposits" : "/v1/partner/withdrawals",
      json: request,
      signed: true,
      replaySafe: true,
    },
    {
      partnerOrderRef: request.partner_order_ref,
      partnerClientId: request.partner_client_id,
      types: [kind],
      leg: {
        side: kind === "deposit" ? "debit" : "credit",
        assetId: request.asset_id,
        amount: request.amount,
      },
    },
    options,
  );
}

export class Deposits {
  readonly #sender: RequestSender;
  constructor(sender: RequestSender) {
    this.#sender = sender;
  }

  /**
   * POST /v1/partner/deposits: raises the client's available balance by `amount` before returning.
   * Errors: 422; 2008, 2009, 2010, 2012; 2020 only when the reference names another order.
   */
  create(request: FundingRequest, options: RequestOptions = {}): Promise<WithResponse<OrderResult>> {
    return fund(this.#sender, "deposit", request, options);
  }
}

export class Withdrawals {
  readonly #sender: RequestSender;
  constructor(sender: RequestSender) {
    this.#sender = sender;
  }

  /**
   * POST /v1/partner/withdrawals: lowers the client's available balance by `amount`.
   * Errors: 422; 2008, 2009, 2010, 2012, 3005; 2020 only when the reference names another order.
   */
  create(request: FundingRequest, options: RequestOptions = {}): Promise<WithResponse<OrderResult>> {
    return fund(this.#sender, "withdrawal", request, options);
  }
}
