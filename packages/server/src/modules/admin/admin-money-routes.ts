// Admin API for the catalog's assets and the ledger check.

import { parseDecimal } from "@counterpart/protocol";
import type { FastifyInstance } from "fastify";
import { Type } from "typebox";
import { moneyToPg } from "../../db/numeric.ts";
import { validationError } from "../../http/http-error.ts";
import type { Services } from "../../services.ts";
import { type AssetChanges, upsertAsset } from "../catalog/catalog-admin.ts";
import { checkLedger } from "../ledger/index.ts";

const AssetBody = Type.Object(
  {
    type: Type.Optional(Type.Union([Type.Literal("fiat"), Type.Literal("crypto")])),
    name_en: Type.Optional(Type.String({ minLength: 1, maxLength: 255 })),
    decimal_places: Type.Optional(Type.Integer({ minimum: 0, maximum: 8 })),
    published: Type.Optional(Type.Boolean()),
    depositable: Type.Optional(Type.Boolean()),
    withdrawable: Type.Optional(Type.Boolean()),
    usd_rate: Type.Optional(Type.Union([Type.String({ maxLength: 64 }), Type.Null()])),
  },
  { additionalProperties: false },
);

type AssetBodyType = Omit<AssetChanges, "usd_rate"> & { usd_rate?: string | null };

export function adminMoneyRoutes(app: FastifyInstance, services: Services): void {
  const { db } = services.database;

  app.put<{ Params: { asset_id: string }; Body: AssetBodyType }>(
    "/admin/assets/:asset_id",
    { schema: { params: Type.Object({ asset_id: Type.String({ maxLength: 64 }) }), body: AssetBody } },
    async (request, reply) => {
      const { usd_rate, ...rest } = request.body;
      const changes: AssetChanges = { ...rest };
      if (usd_rate !== undefined) {
        if (usd_rate === null) changes.usd_rate = null;
        else {
          const rate = parseDecimal(usd_rate);
          if (rate === null || rate <= 0n) {
            throw validationError([
              {
                loc: ["body", "usd_rate"],
                msg: "Input should be a decimal > 0 with at most 8 places",
                type: "decimal_parsing",
              },
            ]);
          }
          changes.usd_rate = moneyToPg(rate);
        }
      }
      const result = await upsertAsset(db, request.params.asset_id, changes);
      if (!result.ok) {
        const detail =
          result.error === "invalid_asset_id"
            ? {
                loc: ["path", "asset_id"],
                msg: "Asset ids are 2 to 10 upper-case letters or digits",
                type: "string_pattern_mismatch",
              }
            : { loc: ["body", "type"], msg: "A new asset needs type and name_en", type: "missing" };
        throw validationError([detail]);
      }
      return reply.code(result.created ? 201 : 200).send({ result: result.asset });
    },
  );

  app.get("/admin/ledger/check", async () => {
    const differences = await checkLedger(db);
    return { result: { ok: differences.length === 0, differences } };
  });
}
