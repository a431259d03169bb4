// POST /v1/partner/deposits and /v1/partner/withdrawals (spec §4.4).

import type { FastifyInstance } from "fastify";
import { Type } from "typebox";
import { amountField } from "../../http/amount.ts";
import { HttpError } from "../../http/http-error.ts";
import { OrderSchema } from "../orders/index.ts";
import type { FundingService } from "./funding-service.ts";

const FundingBody = Type.Object({
  partner_client_id: Type.String({ minLength: 1, maxLength: 255 }),
  asset_id: Type.String({ minLength: 1, maxLength: 32 }),
  amount: Type.String({ maxLength: 128, description: "decimal string > 0 with at most 8 decimal places" }),
  partner_order_ref: Type.String({ minLength: 1, maxLength: 255 }),
});

interface FundingBodyType {
  partner_client_id: string;
  asset_id: string;
  amount: string;
  partner_order_ref: string;
}

export function fundingRoutes(app: FastifyInstance, funding: FundingService): void {
  for (const [url, kind] of [
    ["/v1/partner/deposits", "deposit"],
    ["/v1/partner/withdrawals", "withdraw"],
  ] as const) {
    app.post<{ Body: FundingBodyType }>(
      url,
      { schema: { body: FundingBody, response: { 200: Type.Object({ result: OrderSchema }) } } },
      async (request) => {
        const body = request.body;
        const amount = amountField(body.amount, ["body", "amount"]);
        const req = {
          partnerClientId: body.partner_client_id,
          assetId: body.asset_id,
          amount,
          partnerOrderRef: body.partner_order_ref,
        };
        const result =
          kind === "deposit"
            ? await funding.deposit(request.partnerId!, req)
            : await funding.withdraw(request.partnerId!, req);
        if (!result.ok) throw new HttpError(result.error, result.detail ?? null);
        return { result: result.order };
      },
    );
  }
}
