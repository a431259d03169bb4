// POST /v1/partner/quotes and /v1/partner/quotes/execute.

import { tradeSides } from "@counterpart/protocol";
import type { FastifyInstance } from "fastify";
import { type Static, Type } from "typebox";
import { amountField } from "../../http/amount.ts";
import { HttpError } from "../../http/http-error.ts";
import { errorResponses } from "../../http/openapi.ts";
import { signedWrite } from "../../http/signature-auth.ts";
import { literalUnion, nullablePartnerIdText, partnerIdText } from "../../platform/wire-schemas.ts";
import { OrderSchema } from "../orders/index.ts";
import { type TradingService, tokenPattern } from "./trading-service.ts";
import { QuoteSchema } from "./trading-views.ts";

const QuoteBody = Type.Object({
  partner_client_id: partnerIdText(),
  asset_pair: Type.String({ minLength: 1, maxLength: 32, description: 'A pair id, e.g. "BTC-AED".' }),
  side: literalUnion(tradeSides),
  base_amount: Type.String({
    maxLength: 128,
    description:
      "decimal string > 0 with at most the base asset's decimal places (a finer amount is a 422, told after 2013)",
  }),
});

const ExecuteBody = Type.Object({
  partner_client_id: partnerIdText(),
  token: Type.String({
    maxLength: 64,
    description: "The token of a quote for the same client, before its lifetime runs out.",
    pattern: tokenPattern.source,
    "x-error": {
      type: "string_pattern_mismatch",
      msg: "Input should be a quote token (qt_ and 43 base64url characters)",
    },
  }),
  partner_order_ref: Type.Optional(nullablePartnerIdText()),
});

/** msg_detail of a quote's 400: the quote that would have been given (token null), and a limit. */
const QuoteErrorDetail = Type.Union([
  Type.Null(),
  Type.Object({
    limit: Type.Optional(
      Type.String({ description: "4003, 4004: the pair's maximum or minimum volume, in the base asset" }),
    ),
    quote: QuoteSchema,
  }),
]);

export function tradingRoutes(app: FastifyInstance, trading: TradingService): void {
  app.post<{ Body: Static<typeof QuoteBody> }>(
    "/v1/partner/quotes",
    {
      // The quote's statement records the request's signature (SignedWrite): one commit per quote.
      config: { recordsSignature: true },
      schema: {
        tags: ["trading"],
        operationId: "createQuote",
        summary: "Quote a trade",
        description:
          "Prices `base_amount` of the pair's base asset (buy at the pair's buy price, sell at its " +
          "sell price) and returns a quote with a single-use token, valid for `lifetime` seconds. " +
          "On 3005, 4000, 4001, 4003 and 4004, `msg_detail` holds the quote that would have been " +
          "given (token null), and `limit` on 4003 and 4004.",
        body: QuoteBody,
        response: {
          200: Type.Object({ result: QuoteSchema }),
          ...errorResponses(
            [
              "invalid_client",
              "client_not_verified",
              "client_deactivated",
              "invalid_asset_pair",
              "trading_not_available",
              "trading_temporarily_unavailable",
              "amount_below_minimum",
              "amount_above_maximum",
              "insufficient_funds",
            ],
            { detail: QuoteErrorDetail },
          ),
        },
      },
    },
    async (request) => {
      const b = request.body;
      const baseAmount = amountField(b.base_amount, ["body", "base_amount"]);
      const result = await trading.quote(
        request.partnerId!,
        { partnerClientId: b.partner_client_id, pairId: b.asset_pair, side: b.side, baseAmount },
        signedWrite(request),
      );
      if (!result.ok) throw new HttpError(result.error, result.detail);
      return { result: result.quote };
    },
  );

  app.post<{ Body: Static<typeof ExecuteBody> }>(
    "/v1/partner/quotes/execute",
    {
      // The order's statement records the request's signature (SignedWrite): one commit per trade.
      config: { recordsSignature: true },
      schema: {
        tags: ["trading"],
        operationId: "executeQuote",
        summary: "Execute a quote",
        description:
          "Executes the quote at its quoted price and returns the order (type buy or sell). Funds " +
          "gone since the quote give an order in status `rejected` (HTTP 200, no balance change). " +
          "An expired, spent or foreign token is 4008; a malformed one 422. A reused " +
          "partner_order_ref is a 409 (2020): fetch the order by its reference.",
        body: ExecuteBody,
        response: {
          200: Type.Object({ result: OrderSchema }),
          ...errorResponses([
            "duplicate_order_ref",
            "invalid_client",
            "client_not_verified",
            "client_deactivated",
            "invalid_trading_token",
            "service_unavailable",
          ]),
        },
      },
    },
    async (request) => {
      const b = request.body;
      const result = await trading.execute(
        request.partnerId!,
        {
          partnerClientId: b.partner_client_id,
          token: b.token,
          partnerOrderRef: b.partner_order_ref ?? null,
        },
        signedWrite(request),
      );
      if (!result.ok) throw new HttpError(result.error);
      return { result: result.order };
    },
  );
}
