// A client's balances (docs/reference.md §4.2). Balances change between calls: fetch one before deciding.

import type { RequestOptions, RequestSender } from "../request-sender.ts";
import { segment } from "../request-sender.ts";
import { itemsOf, resultOf } from "../responses.ts";
import type { Balance, WithResponse } from "../types.ts";

export class Balances {
  readonly #sender: RequestSender;
  constructor(sender: RequestSender) {
    this.#sender = sender;
  }

  /** GET /v1/partner/balances: one entry per asset, zero balances included. Errors: 2008. */
  async list(
    partnerClientId: string,
    options: RequestOptions = {},
  ): Promise<WithResponse<WithResponse<Balance>[]>> {
    const response = await this.#sender.send(
      {
        method: "GET",
        path: "/v1/partner/balances",
        query: { partner_client_id: partnerClientId },
        signed: true,
        replaySafe: true,
      },
      options,
    );
    return itemsOf<Balance>(response);
  }

  /** GET /v1/partner/balances/{asset_id}. Errors: 2008 (client), 2012 (asset). */
  async get(
    partnerClientId: string,
    assetId: string,
    options: RequestOptions = {},
  ): Promise<WithResponse<Balance>> {
    const response = await this.#sender.send(
      {
        method: "GET",
        path: `/v1/partner/balances/${segment(assetId, "assetId")}`,
        query: { partner_client_id: partnerClientId },
        signed: true,
        replaySafe: true,
      },
      options,
    );
    return resultOf<Balance>(response);
  }
}
