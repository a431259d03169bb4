// GET /v1/partner/balances and /v1/partner/balances/{asset_id} (docs/reference.md §4.2).

import type { FastifyInstance } from "fastify";
import { Type } from "typebox";
import { HttpError } from "../../http/http-error.ts";
import { errorResponses } from "../../http/openapi.ts";
import { credentialWitness } from "../../http/signature-auth.ts";
import { BalanceSchema } from "./balance-views.ts";
import type { BalancesService } from "./balances-service.ts";

const ClientQuery = Type.Object({ partner_client_id: Type.String({ minLength: 1, maxLength: 255 }) });

export function balancesRoutes(app: FastifyInstance, balances: BalancesService): void {
  app.get<{ Querystring: { partner_client_id: string } }>(
    "/v1/partner/balances",
    {
      config: { witnessesCredentials: true },
      schema: {
        tags: ["balances"],
        operationId: "listBalances",
        summary: "List a client's balances",
        description: "One entry per asset of the catalog, zero balances included.",
        querystring: ClientQuery,
        response: {
          200: Type.Object({ items: Type.Array(BalanceSchema) }),
          ...errorResponses(["invalid_client"]),
        },
      },
    },
    async (request) => {
      const result = await balances.list(
        request.partnerId!,
        request.query.partner_client_id,
        credentialWitness(request),
      );
      if (!result.ok) throw new HttpError(result.error);
      return { items: result.items };
    },
  );

  app.get<{ Querystring: { partner_client_id: string }; Params: { asset_id: string } }>(
    "/v1/partner/balances/:asset_id",
    {
      config: { witnessesCredentials: true },
      schema: {
        tags: ["balances"],
        operationId: "getBalance",
        summary: "Get a client's balance of one asset",
        params: Type.Object({ asset_id: Type.String({ maxLength: 64 }) }),
        querystring: ClientQuery,
        response: {
          200: Type.Object({ result: BalanceSchema }),
          ...errorResponses(["invalid_client", "invalid_asset"]),
        },
      },
    },
    async (request) => {
      const result = await balances.get(
        request.partnerId!,
        request.query.partner_client_id,
        request.params.asset_id,
        credentialWitness(request),
      );
      if (!result.ok) throw new HttpError(result.error);
      return { result: result.balance };
    },
  );
}
