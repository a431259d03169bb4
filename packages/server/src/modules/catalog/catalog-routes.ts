// Public catalog endpoints and the signed asset-pair endpoints.

import type { FastifyInstance } from "fastify";
import { Type } from "typebox";
import { HttpError } from "../../http/http-error.ts";
import { errorResponses } from "../../http/openapi.ts";
import { credentialWitness } from "../../http/signature-auth.ts";
import type { CatalogService } from "./catalog-service.ts";
import { AssetPairSchema, AssetSchema, CountrySchema } from "./catalog-views.ts";

const IdParams = (name: string) => Type.Object({ [name]: Type.String({ maxLength: 64 }) });

export function catalogRoutes(app: FastifyInstance, catalog: CatalogService): void {
  app.get(
    "/v1/public/assets",
    {
      schema: {
        tags: ["public"],
        operationId: "listAssets",
        summary: "List the assets",
        description: "Every asset of the catalog with its flags, unpublished ones included.",
        response: { 200: Type.Object({ items: Type.Array(AssetSchema) }) },
      },
    },
    async () => ({ items: await catalog.listAssets() }),
  );

  app.get<{ Params: { asset_id: string } }>(
    "/v1/public/assets/:asset_id",
    {
      schema: {
        tags: ["public"],
        operationId: "getAsset",
        summary: "Get an asset",
        params: IdParams("asset_id"),
        response: { 200: Type.Object({ result: AssetSchema }), ...errorResponses(["not_found"]) },
      },
    },
    async (request) => {
      const asset = await catalog.getAsset(request.params.asset_id);
      if (asset === null) throw new HttpError("not_found");
      return { result: asset };
    },
  );

  app.get(
    "/v1/public/countries",
    {
      schema: {
        tags: ["public"],
        operationId: "listCountries",
        summary: "List the supported countries",
        description:
          "Country ids are lower-case ISO 3166-1 alpha-2 codes; fetch them rather than hard-code them.",
        response: { 200: Type.Object({ items: Type.Array(CountrySchema) }) },
      },
    },
    async () => ({ items: await catalog.listCountries() }),
  );

  app.get<{ Params: { country_id: string } }>(
    "/v1/public/countries/:country_id",
    {
      schema: {
        tags: ["public"],
        operationId: "getCountry",
        summary: "Get a supported country",
        params: IdParams("country_id"),
        response: { 200: Type.Object({ result: CountrySchema }), ...errorResponses(["not_found"]) },
      },
    },
    async (request) => {
      const country = await catalog.getCountry(request.params.country_id);
      if (country === null) throw new HttpError("not_found");
      return { result: country };
    },
  );

  app.get(
    "/v1/partner/asset-pairs",
    {
      config: { witnessesCredentials: true },
      schema: {
        tags: ["asset-pairs"],
        operationId: "listAssetPairs",
        summary: "List the asset pairs available to the partner",
        response: { 200: Type.Object({ items: Type.Array(AssetPairSchema) }) },
      },
    },
    async (request) => ({ items: await catalog.listPairs(request.partnerId!, credentialWitness(request)) }),
  );

  app.get<{ Params: { asset_pair_id: string } }>(
    "/v1/partner/asset-pairs/:asset_pair_id",
    {
      config: { witnessesCredentials: true },
      schema: {
        tags: ["asset-pairs"],
        operationId: "getAssetPair",
        summary: "Get an asset pair",
        description: "404 when the pair does not exist or is not available to the partner.",
        params: IdParams("asset_pair_id"),
        response: { 200: Type.Object({ result: AssetPairSchema }), ...errorResponses(["not_found"]) },
      },
    },
    async (request) => {
      const pair = await catalog.getPair(
        request.partnerId!,
        request.params.asset_pair_id,
        credentialWitness(request),
      );
      if (pair === null) throw new HttpError("not_found");
      return { result: pair };
    },
  );
}
