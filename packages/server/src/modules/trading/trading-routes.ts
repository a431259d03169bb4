// POST /v1/partner/quotes and /v1/partner/quotes/execute (spec §4.3).

import type { FastifyInstance } from "fastify";
import { Type } from "typebox";
import { amountField } from "../../http/amount.ts";
import { HttpError } from "../../http/http-error.ts";
import { OrderSchema } from "../orders/index.ts";
import { type TradingService, tokenPattern } from "./trading-service.ts";
import { QuoteSchema } from "./trading-views.ts";

const QuoteBody = Type.Object({
  partner_client_id: Type.String({ minLength: 1, maxLength: 255 }),
  asset_pair: Type.String({ minLength: 1, maxLength: 32 }),
  side: Type.Union([Type.Literal("buy"), Type.Literal("sell")]),
  base_amount: Type.String({ maxLength: 128, description: "decimal string > 0" }),
});

const ExecuteBody = Type.Object({
  partner_client_id: Type.String({ minLength: 1, maxLength: 255 }),
  token: Type.String({
    maxLength: 64,
    pattern: tokenPattern.source,
    "x-error": {
      type: "string_pattern_mismatch",
      msg: "Input should be a quote token (qt_ and 43 base64url characters)",
    },
  }),
  partner_order_ref: Type.Optional(Type.Union([Type.String({ minLength: 1, maxLength: 255 }), Type.Null()])),
});

export function tradingRoutes(app: FastifyInstance, trading: TradingService): void {
  app.post<{
    Body: { partner_client_id: string; asset_pair: string; side: "buy" | "sell"; base_amount: string };
  }>(
    "/v1/partner/quotes",
    { schema: { body: QuoteBody, response: { 200: Type.Object({ result: QuoteSchema }) } } },
    async (request) => {
      const b = request.body;
      const baseAmount = amountField(b.base_amount, ["body", "base_amount"]);
      const result = await trading.quote(request.partnerId!, {
        partnerClientId: b.partner_client_id,
        pairId: b.asset_pair,
        side: b.side,
        baseAmount,
      });
      if (!result.ok) throw new HttpError(result.error, result.detail);
      return { result: result.quote };
    },
  );

  app.post<{ Body: { partner_client_id: string; token: string; partner_order_ref?: string | null } }>(
    "/v1/partner/quotes/execute",
    { schema: { body: ExecuteBody, response: { 200: Type.Object({ result: OrderSchema }) } } },
    async (request) => {
      const b = request.body;
      const result = await trading.execute(request.partnerId!, {
        partnerClientId: b.partner_client_id,
        token: b.token,
        partnerOrderRef: b.partner_order_ref ?? null,
      });
      if (!result.ok) throw new HttpError(result.error);
      return { result: result.order };
    },
  );
}
