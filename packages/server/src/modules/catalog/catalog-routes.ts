// Public catalog endpoints (spec §4.1) and the signed asset-pair endpoints (§4.2).

import type { FastifyInstance } from "fastify";
import { Type } from "typebox";
import { HttpError } from "../../http/http-error.ts";
import type { CatalogService } from "./catalog-service.ts";
import { AssetPairSchema, AssetSchema, CountrySchema } from "./catalog-views.ts";

const IdParams = (name: string) => Type.Object({ [name]: Type.String({ maxLength: 64 }) });

export function catalogRoutes(app: FastifyInstance, catalog: CatalogService): void {
  app.get(
    "/v1/public/assets",
    { schema: { response: { 200: Type.Object({ items: Type.Array(AssetSchema) }) } } },
    async () => ({ items: await catalog.listAssets() }),
  );

  app.get<{ Params: { asset_id: string } }>(
    "/v1/public/assets/:asset_id",
    { schema: { params: IdParams("asset_id"), response: { 200: Type.Object({ result: AssetSchema }) } } },
    async (request) => {
      const asset = await catalog.getAsset(request.params.asset_id);
      if (asset === null) throw new HttpError("not_found");
      return { result: asset };
    },
  );

  app.get(
    "/v1/public/countries",
    { schema: { response: { 200: Type.Object({ items: Type.Array(CountrySchema) }) } } },
    async () => ({ items: await catalog.listCountries() }),
  );

  app.get<{ Params: { country_id: string } }>(
    "/v1/public/countries/:country_id",
    {
      schema: { params: IdParams("country_id"), response: { 200: Type.Object({ result: CountrySchema }) } },
    },
    async (request) => {
      const country = await catalog.getCountry(request.params.country_id);
      if (country === null) throw new HttpError("not_found");
      return { result: country };
    },
  );

  app.get(
    "/v1/partner/asset-pairs",
    { schema: { response: { 200: Type.Object({ items: Type.Array(AssetPairSchema) }) } } },
    async (request) => ({ items: await catalog.listPairs(request.partnerId!) }),
  );

  app.get<{ Params: { asset_pair_id: string } }>(
    "/v1/partner/asset-pairs/:asset_pair_id",
    {
      schema: {
        params: IdParams("asset_pair_id"),
        response: { 200: Type.Object({ result: AssetPairSchema }) },
      },
    },
    async (request) => {
      const pair = await catalog.getPair(request.partnerId!, request.params.asset_pair_id);
      if (pair === null) throw new HttpError("not_found");
      return { result: pair };
    },
  );
}
