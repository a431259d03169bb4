// The partner's clients (docs/reference.md §4.6). Every client path names the client by partner_client_id;
// the single-client paths end with a slash, which is part of the signed path.

import { checkPageParams, paginate } from "../pagination.ts";
import type { RequestOptions, RequestSender } from "../request-sender.ts";
import { segment } from "../request-sender.ts";
import { pageOf, responseInfo, resultOf } from "../responses.ts";
import type {
  Client,
  ClientCreateRequest,
  ClientListParams,
  ClientUpdateRequest,
  Page,
  ResponseInfo,
  WithResponse,
} from "../types.ts";

const clientPath = (partnerClientId: string) =>
  `/v1/partner/clients/${segment(partnerClientId, "partnerClientId")}`;

export class Clients {
  readonly #sender: RequestSender;
  constructor(sender: RequestSender) {
    this.#sender = sender;
  }

  /**
   * POST /v1/partner/clients: the client, verified and active. Not sent again after a timeout or
   * a connection lost mid-request (the first copy may have created the client, and a second would
   * answer 2026): on such a TimeoutError or NetworkError, call `get` before creating again.
   * Errors: 422; 2016, 2021, 2022, 2023, 2024, 2025, 2026, 2027, 2028.
   */
  async create(request: ClientCreateRequest, options: RequestOptions = {}): Promise<WithResponse<Client>> {
    const response = await this.#sender.send(
      { method: "POST", path: "/v1/partner/clients", json: request, signed: true, replaySafe: false },
      options,
    );
    return resultOf<Client>(response);
  }

  /** GET /v1/partner/clients/{partner_client_id}/. Errors: 2008 for an unknown client. */
  async get(partnerClientId: string, options: RequestOptions = {}): Promise<WithResponse<Client>> {
    const response = await this.#sender.send(
      { method: "GET", path: `${clientPath(partnerClientId)}/`, signed: true, replaySafe: true },
      options,
    );
    return resultOf<Client>(response);
  }

  /**
   * PUT /v1/partner/clients/{partner_client_id}/: a full replacement of the mutable fields (send
   * every one, not only the changed ones). Errors: 422; 2008, 2016, 2022, 2023, 2025, 2027, 2028.
   */
  async update(
    partnerClientId: string,
    request: ClientUpdateRequest,
    options: RequestOptions = {},
  ): Promise<WithResponse<Client>> {
    const response = await this.#sender.send(
      {
        method: "PUT",
        path: `${clientPath(partnerClientId)}/`,
        json: request,
        signed: true,
        replaySafe: true,
      },
      options,
    );
    return resultOf<Client>(response);
  }

  /**
   * PUT /v1/partner/clients/{partner_client_id}/activation: false blocks quotes, executions and
   * funding (2010) and keeps the record; true allows them again. Resolves to the response's facts
   * (there is no body). Errors: 422; 2008.
   */
  async setActive(
    partnerClientId: string,
    active: boolean,
    options: RequestOptions = {},
  ): Promise<ResponseInfo> {
    if (typeof active !== "boolean") throw new TypeError(`active must be a boolean, got ${String(active)}`);
    const response = await this.#sender.send(
      {
        method: "PUT",
        path: `${clientPath(partnerClientId)}/activation`,
        json: { active },
        signed: true,
        replaySafe: true,
      },
      options,
    );
    return responseInfo(response);
  }

  /** GET /v1/partner/clients: one page, newest first, filtered by status and creation time. */
  async list(
    params: ClientListParams = {},
    options: RequestOptions = {},
  ): Promise<WithResponse<Page<WithResponse<Client>>>> {
    checkPageParams(params);
    const response = await this.#sender.send(
      {
        method: "GET",
        path: "/v1/partner/clients",
        query: {
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
    return pageOf<Client>(response);
  }

  /** Every client matching the filters, across all pages (100 a page by default). */
  listAll(
    params: ClientListParams = {},
    options: RequestOptions = {},
  ): AsyncGenerator<WithResponse<Client>, void, undefined> {
    return paginate(params, (page, page_size) => this.list({ ...params, page, page_size }, options));
  }
}
