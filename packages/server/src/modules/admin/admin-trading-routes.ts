// Admin API for trading: pair settings, prices by hand and back to the feed, per-partner pair
// availability and fee rates, the partner's default fee rate and VAT percentage.

import { type FieldError, ONE, parseDecimal } from "@counterpart/protocol";
import type { FastifyInstance } from "fastify";
import { Type } from "typebox";
import { HttpError, validationError } from "../../http/http-error.ts";
import type { Services } from "../../services.ts";
import {
  type AdminResult,
  resumeFeed,
  setPartnerFees,
  setPartnerPair,
  setPrice,
  upsertPair,
} from "../trading/trading-admin.ts";

const DecimalText = Type.String({ minLength: 1, maxLength: 64 });
const NullableDecimalText = Type.Union([DecimalText, Type.Null()]);
const uuid = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

function decimal(value: string, field: string, rule: (v: bigint) => boolean, ruleText: string): bigint {
  const v = parseDecimal(value);
  if (v === null || !rule(v)) {
    const detail: FieldError = {
      loc: ["body", field],
      msg: `Input should be ${ruleText}`,
      type: "decimal_parsing",
    };
    throw validationError([detail]);
  }
  return v;
}

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
  }
}

export function adminTradingRoutes(app: FastifyInstance, services: Services): void {
  const { db } = services.database;

  app.put<{
    Params: { pair_id: string };
    Body: {
      tradable?: boolean;
      min_volume?: string;
      max_volume?: string;
      lifetime_s?: number;
      fee_rate?: string;
    };
  }>(
    "/admin/pairs/:pair_id",
    {
      schema: {
        params: Type.Object({ pair_id: Type.String({ maxLength: 32 }) }),
        body: Type.Object(
          {
            tradable: Type.Optional(Type.Boolean()),
            min_volume: Type.Optional(DecimalText),
            max_volume: Type.Optional(DecimalText),
            lifetime_s: Type.Optional(Type.Integer({ minimum: 1, maximum: 3600 })),
            fee_rate: Type.Optional(DecimalText),
          },
          { additionalProperties: false },
        ),
      },
    },
    async (request) => {
      const b = request.body;
      const nonNegative = (v: string, f: string) =>
        decimal(v, f, (x) => x >= 0n, "a decimal >= 0 with at most 8 places");
      return unwrap(
        await upsertPair(db, request.params.pair_id, {
          ...(b.tradable === undefined ? {} : { tradable: b.tradable }),
          ...(b.min_volume === undefined ? {} : { minVolume: nonNegative(b.min_volume, "min_volume") }),
          ...(b.max_volume === undefined ? {} : { maxVolume: nonNegative(b.max_volume, "max_volume") }),
          ...(b.lifetime_s === undefined ? {} : { lifetimeSeconds: b.lifetime_s }),
          ...(b.fee_rate === undefined ? {} : { feeRate: rate(b.fee_rate, "fee_rate") }),
        }),
      );
    },
  );

  app.put<{ Params: { pair_id: string }; Body: { buy: string; sell: string; at?: string } }>(
    "/admin/pairs/:pair_id/price",
    {
      schema: {
        params: Type.Object({ pair_id: Type.String({ maxLength: 32 }) }),
        body: Type.Object(
          { buy: DecimalText, sell: DecimalText, at: Type.Optional(Type.String({ format: "date-time" })) },
          { additionalProperties: false },
        ),
      },
    },
    async (request) => {
      const positive = (v: string, f: string) =>
        decimal(v, f, (x) => x > 0n, "a decimal > 0 with at most 8 places");
      const b = request.body;
      const at = b.at === undefined ? null : Date.parse(b.at);
      return unwrap(
        await setPrice(
          db,
          services.clock,
          request.params.pair_id,
          positive(b.buy, "buy"),
          positive(b.sell, "sell"),
          at,
        ),
      );
    },
  );

  app.post<{ Params: { pair_id: string } }>(
    "/admin/pairs/:pair_id/resume",
    { schema: { params: Type.Object({ pair_id: Type.String({ maxLength: 32 }) }) } },
    async (request) => unwrap(await resumeFeed(db, request.params.pair_id)),
  );

  app.put<{
    Params: { partner_id: string; pair_id: string };
    Body: { available?: boolean; fee_rate?: string | null };
  }>(
    "/admin/partners/:partner_id/pairs/:pair_id",
    {
      schema: {
        params: Type.Object({
          partner_id: Type.String({ maxLength: 64 }),
          pair_id: Type.String({ maxLength: 32 }),
        }),
        body: Type.Object(
          { available: Type.Optional(Type.Boolean()), fee_rate: Type.Optional(NullableDecimalText) },
          { additionalProperties: false },
        ),
      },
    },
    async (request) => {
      const { partner_id, pair_id } = request.params;
      if (!uuid.test(partner_id)) throw new HttpError("not_found");
      const b = request.body;
      return unwrap(
        await setPartnerPair(db, partner_id, pair_id, {
          ...(b.available === undefined ? {} : { available: b.available }),
          ...(b.fee_rate === undefined
            ? {}
            : { feeRate: b.fee_rate === null ? null : rate(b.fee_rate, "fee_rate") }),
        }),
      );
    },
  );

  app.put<{
    Params: { partner_id: string };
    Body: { fee_rate?: string | null; vat_percentage?: string | null };
  }>(
    "/admin/partners/:partner_id/fees",
    {
      schema: {
        params: Type.Object({ partner_id: Type.String({ maxLength: 64 }) }),
        body: Type.Object(
          {
            fee_rate: Type.Optional(NullableDecimalText),
            vat_percentage: Type.Optional(NullableDecimalText),
          },
          { additionalProperties: false },
        ),
      },
    },
    async (request) => {
      if (!uuid.test(request.params.partner_id)) throw new HttpError("not_found");
      const b = request.body;
      const vat = (v: string) =>
        decimal(
          v,
          "vat_percentage",
          (x) => x >= 0n && x <= 100n * ONE && x % 10_000n === 0n,
          "a percentage from 0 to 100 with at most 4 decimals",
        );
      return unwrap(
        await setPartnerFees(db, request.params.partner_id, {
          ...(b.fee_rate === undefined
            ? {}
            : { feeRate: b.fee_rate === null ? null : rate(b.fee_rate, "fee_rate") }),
          ...(b.vat_percentage === undefined
            ? {}
            : { vatPercentage: b.vat_percentage === null ? null : vat(b.vat_percentage) }),
        }),
      );
    },
  );
}
