// Admin API for trading: pair settings, prices by hand and back to the feed, per-partner pair
// availability and fee rates, the partner's default fee rate and VAT percentage.

import { ONE } from "@counterpart/protocol";
import type { FastifyInstance } from "fastify";
import { Type } from "typebox";
import { auditNote, reasonRequired } from "../../http/admin-access.ts";
import { decimalField } from "../../http/amount.ts";
import { HttpError, validationError } from "../../http/http-error.ts";
import { isUuid } from "../../platform/uuid.ts";
import {
  AdminPairSchema,
  AdminPartnerFeesSchema,
  AdminPartnerPairSchema,
  type AdminResult,
  PairChangesBody,
  PairPriceBody,
  PartnerFeesChangesBody,
  PartnerPairChangesBody,
  priceAheadToleranceMs,
  type TradingAdminService,
} from "../trading/index.ts";

const PairParams = Type.Object({ pair_id: Type.String({ maxLength: 32 }) });
const OnePair = Type.Object({ result: AdminPairSchema });

const decimal = (value: string, field: string, rule: (v: bigint) => boolean, ruleText: string): bigint =>
  decimalField(value, ["body", field], rule, ruleText);

const rate = (value: string, field: string) =>
  decimal(value, field, (v) => v >= 0n && v < ONE, "a decimal from 0 (inclusive) to 1 (exclusive)");

function unwrap<T>(r: AdminResult<T>): { result: T } {
  if (r.ok) return { result: r.value };
  switch (r.error) {
    case "pair_not_found":
    case "partner_not_found":
      throw new HttpError("not_found");
    case "invalid_pair_id":
      throw validationError([
        {
          loc: ["path", "pair_id"],
          msg: "Pair ids are BASE-QUOTE asset ids",
          type: "string_pattern_mismatch",
        },
      ]);
    case "unknown_asset":
      throw validationError([
        { loc: ["path", "pair_id"], msg: "Both assets must exist in the catalog", type: "value_error" },
      ]);
    case "volume_bounds":
      throw validationError([
        {
          loc: ["body", "max_volume"],
          msg: "Volumes need 0 <= min_volume <= max_volume",
          type: "value_error",
        },
      ]);
    case "price_order":
      throw validationError([
        { loc: ["body", "sell"], msg: "Prices need buy >= sell > 0", type: "value_error" },
      ]);
    case "price_in_future":
      throw validationError([
        {
          loc: ["body", "at"],
          msg: `The prices' time should be at most ${priceAheadToleranceMs / 1000} s past the service's clock: a price stamped later would stay fresh past its time`,
          type: "value_error",
        },
      ]);
    case "reason_required":
      throw reasonRequired();
    case "no_price_feed":
      throw validationError([
        {
          loc: ["body"],
          msg: "No price feed runs (PRICE_FEED=manual): there is no feed to hand the pair back to; set its prices by hand instead",
          type: "value_error",
        },
      ]);
  }
}

/** What the trading routes of the admin API use. */
export interface AdminTradingDeps {
  readonly tradingAdmin: TradingAdminService;
}

export function adminTradingRoutes(app: FastifyInstance, { tradingAdmin }: AdminTradingDeps): void {
  app.put<{ Params: { pair_id: string }; Body: PairChangesBody }>(
    "/admin/pairs/:pair_id",
    { schema: { params: PairParams, body: PairChangesBody, response: { 200: OnePair } } },
    async (request) => {
      const b = request.body;
      const nonNegative = (v: string, f: string) =>
        decimal(v, f, (x) => x >= 0n, "a decimal >= 0 with at most 8 places");
      return unwrap(
        await tradingAdmin.upsertPair(
          request.params.pair_id,
          {
            ...(b.tradable === undefined ? {} : { tradable: b.tradable }),
            ...(b.min_volume === undefined ? {} : { minVolume: nonNegative(b.min_volume, "min_volume") }),
            ...(b.max_volume === undefined ? {} : { maxVolume: nonNegative(b.max_volume, "max_volume") }),
            ...(b.lifetime_s === undefined ? {} : { lifetimeSeconds: b.lifetime_s }),
            ...(b.fee_rate === undefined ? {} : { feeRate: rate(b.fee_rate, "fee_rate") }),
          },
          auditNote(request),
        ),
      );
    },
  );

  app.put<{ Params: { pair_id: string }; Body: PairPriceBody }>(
    "/admin/pairs/:pair_id/price",
    { schema: { params: PairParams, body: PairPriceBody, response: { 200: OnePair } } },
    async (request) => {
      const positive = (v: string, f: string) =>
        decimal(v, f, (x) => x > 0n, "a decimal > 0 with at most 8 places");
      const b = request.body;
      // The schema's date-time is an instant in years 1 to 9999 (http/validation.ts, isInstant).
      const at = b.at === undefined ? null : Date.parse(b.at);
      return unwrap(
        await tradingAdmin.setPrice(
          request.params.pair_id,
          positive(b.buy, "buy"),
          positive(b.sell, "sell"),
          at,
          auditNote(request, b.reason),
        ),
      );
    },
  );

  app.post<{ Params: { pair_id: string } }>(
    "/admin/pairs/:pair_id/resume",
    { schema: { params: PairParams, response: { 200: OnePair } } },
    async (request) => unwrap(await tradingAdmin.resumeFeed(request.params.pair_id, auditNote(request))),
  );

  app.put<{
    Params: { partner_id: string; pair_id: string };
    Body: PartnerPairChangesBody;
  }>(
    "/admin/partners/:partner_id/pairs/:pair_id",
    {
      schema: {
        params: Type.Object({
          partner_id: Type.String({ maxLength: 64 }),
          pair_id: Type.String({ maxLength: 32 }),
        }),
        body: PartnerPairChangesBody,
        response: { 200: Type.Object({ result: AdminPartnerPairSchema }) },
      },
    },
    async (request) => {
      const { partner_id, pair_id } = request.params;
      if (!isUuid(partner_id)) throw new HttpError("not_found");
      const b = request.body;
      return unwrap(
        await tradingAdmin.setPartnerPair(
          partner_id,
          pair_id,
          {
            ...(b.available === undefined ? {} : { available: b.available }),
            ...(b.fee_rate === undefined
              ? {}
              : { feeRate: b.fee_rate === null ? null : rate(b.fee_rate, "fee_rate") }),
          },
          auditNote(request),
        ),
      );
    },
  );

  app.put<{
    Params: { partner_id: string };
    Body: PartnerFeesChangesBody;
  }>(
    "/admin/partners/:partner_id/fees",
    {
      schema: {
        params: Type.Object({ partner_id: Type.String({ maxLength: 64 }) }),
        body: PartnerFeesChangesBody,
        response: { 200: Type.Object({ result: AdminPartnerFeesSchema }) },
      },
    },
    async (request) => {
      if (!isUuid(request.params.partner_id)) throw new HttpError("not_found");
      const b = request.body;
      const vat = (v: string) =>
        decimal(
          v,
          "vat_percentage",
          (x) => x >= 0n && x <= 100n * ONE && x % 10_000n === 0n,
          "a percentage from 0 to 100 with at most 4 decimals",
        );
      return unwrap(
        await tradingAdmin.setPartnerFees(
          request.params.partner_id,
          {
            ...(b.fee_rate === undefined
              ? {}
              : { feeRate: b.fee_rate === null ? null : rate(b.fee_rate, "fee_rate") }),
            ...(b.vat_percentage === undefined
              ? {}
              : { vatPercentage: b.vat_percentage === null ? null : vat(b.vat_percentage) }),
          },
          auditNote(request),
        ),
      );
    },
  );
}
