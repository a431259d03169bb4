// POST /v1/partner/deposits and /v1/partner/withdrawals.

import type { FastifyInstance } from "fastify";
import { type Static, Type } from "typebox";
import { amountField } from "../../http/amount.ts";
import { HttpError } from "../../http/http-error.ts";
import { errorResponses } from "../../http/openapi.ts";
import { signedWrite } from "../../http/signature-auth.ts";
import { partnerIdText } from "../../platform/wire-schemas.ts";
import { OrderSchema } from "../orders/index.ts";
import type { FundingService } from "./funding-service.ts";

const FundingBody = Type.Object({
  partner_client_id: partnerIdText(),
  asset_id: Type.String({ minLength: 1, maxLength: 32, description: 'A fiat asset id, e.g. "AED".' }),
  amount: Type.String({
    maxLength: 128,
    description:
      "decimal string > 0 with at most 8 decimal places, whatever the asset's decimal_places; kept exactly",
  }),
  partner_order_ref: partnerIdText({
    description: "Unique across the partner's orders of every type; what makes a retry safe.",
  }),
});

type FundingBodyType = Static<typeof FundingBody>;

/** What each endpoint can answer besides its order (FundingService.deposit and .withdraw). */
const fundingErrors = [
  "duplicate_order_ref",
  "invalid_client",
  "client_not_verified",
  "client_deactivated",
  "invalid_asset",
] as const;

const endpoints = [
  {
    url: "/v1/partner/deposits",
    kind: "deposit",
    operationId: "createDeposit",
    summary: "Deposit fiat",
    description:
      "Credits the client's balance and returns the order (type deposit, status completed). The " +
      "asset must exist, be fiat, published and depositable (else 2012). A reused " +
      "partner_order_ref is a 409 (2020): fetch the order by its reference.",
    errors: [...fundingErrors, "service_unavailable"],
  },
  {
    url: "/v1/partner/withdrawals",
    kind: "withdraw",
    operationId: "createWithdrawal",
    summary: "Withdraw fiat",
    description:
      "Debits the client's balance and returns the order (type withdrawal, status completed). The " +
      "asset must exist, be fiat, published and withdrawable (else 2012); an available balance " +
      "below the amount is 3005. A reused partner_order_ref is a 409 (2020): fetch the order by its " +
      "reference.",
    errors: [...fundingErrors, "insufficient_funds_for_payment", "service_unavailable"],
  },
] as const;

export function fundingRoutes(app: FastifyInstance, funding: FundingService): void {
  for (const { url, kind, operationId, summary, description, errors } of endpoints) {
    app.post<{ Body: FundingBodyType }>(
      url,
      {
        // The order's statement records the request's signature (SignedWrite): one commit per order.
        config: { recordsSignature: true },
        schema: {
          tags: ["funding"],
          operationId,
          summary,
          description,
          body: FundingBody,
          response: { 200: Type.Object({ result: OrderSchema }), ...errorResponses(errors) },
        },
      },
      async (request) => {
        const body = request.body;
        const amount = amountField(body.amount, ["body", "amount"]);
        const req = {
          partnerClientId: body.partner_client_id,
          assetId: body.asset_id,
          amount,
          partnerOrderRef: body.partner_order_ref,
        };
        const signed = signedWrite(request);
        const result =
          kind === "deposit"
            ? await funding.deposit(request.partnerId!, req, signed)
            : await funding.withdraw(request.partnerId!, req, signed);
        if (!result.ok) throw new HttpError(result.error);
        return { result: result.order };
      },
    );
  }
}
