// The catalog: public assets and countries (docs/reference.md §4.1, unsigned) and the partner's asset pairs
// (docs/reference.md §4.2, signed).

import type { RequestOptions, RequestSender } from "../request-sender.ts";
import { segment } from "../request-sender.ts";
import { itemsOf, resultOf } from "../responses.ts";
import type { Asset, AssetPair, Country, WithResponse } from "../types.ts";

export class Assets {
  readonly #sender: RequestSender;
  constructor(sender: RequestSender) {
    this.#sender = sender;
  }

  /** GET /v1/public/assets: every asset with its flags, unpublished ones included. */
  async list(options: RequestOptions = {}): Promise<WithResponse<WithResponse<Asset>[]>> {
    const response = await this.#sender.send(
      { method: "GET", path: "/v1/public/assets", signed: false, replaySafe: true },
      options,
    );
    return itemsOf<Asset>(response);
  }

  /** GET /v1/public/assets/{asset_id}. Throws NotFoundError for an unknown asset. */
  async get(assetId: string, options: RequestOptions = {}): Promise<WithResponse<Asset>> {
    const response = await this.#sender.send(
      {
        method: "GET",
        path: `/v1/public/assets/${segment(assetId, "assetId")}`,
        signed: false,
        replaySafe: true,
      },
      options,
    );
    return resultOf<Asset>(response);
  }
}

export class Countries {
  readonly #sender: RequestSender;
  constructor(sender: RequestSender) {
    this.#sender = sender;
  }

  /** GET /v1/public/countries: the supported countries; their ids are what client fields take. */
  async list(options: RequestOptions = {}): Promise<WithResponse<WithResponse<Country>[]>> {
    const response = await this.#sender.send(
      { method: "GET", path: "/v1/public/countries", signed: false, replaySafe: true },
      options,
    );
    return itemsOf<Country>(response);
  }

  /** GET /v1/public/countries/{country_id}. Throws NotFoundError for an unknown or unsupported one. */
  async get(countryId: string, options: RequestOptions = {}): Promise<WithResponse<Country>> {
    const response = await this.#sender.send(
      {
        method: "GET",
        path: `/v1/public/countries/${segment(countryId, "countryId")}`,
        signed: false,
        replaySafe: true,
      },
      options,
    );
    return resultOf<Country>(response);
  }
}

export class AssetPairs {
  readonly #sender: RequestSender;
  constructor(sender: RequestSender) {
    this.#sender = sender;
  }

  /** GET /v1/partner/asset-pairs: the pairs available to this partner, with prices. */
  async list(options: RequestOptions = {}): Promise<WithResponse<WithResponse<AssetPair>[]>> {
    const response = await this.#sender.send(
      { method: "GET", path: "/v1/partner/asset-pairs", signed: true, replaySafe: true },
      options,
    );
    return itemsOf<AssetPair>(response);
  }

  /** GET /v1/partner/asset-pairs/{id}, e.g. "BTC-AED". Throws NotFoundError if absent or not available. */
  async get(assetPairId: string, options: RequestOptions = {}): Promise<WithResponse<AssetPair>> {
    const response = await this.#sender.send(
      {
        method: "GET",
        path: `/v1/partner/asset-pairs/${segment(assetPairId, "assetPairId")}`,
        signed: true,
        replaySafe: true,
      },
      options,
    );
    return resultOf<AssetPair>(response);
  }
}
