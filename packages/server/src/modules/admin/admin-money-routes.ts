// Admin API for the catalog's assets and the ledger check.

import type { FastifyInstance } from "fastify";
import { Type } from "typebox";
import { auditNote } from "../../http/admin-access.ts";
import { decimalField } from "../../http/amount.ts";
import { validationError } from "../../http/http-error.ts";
import {
  type AssetChanges,
  AssetChangesBody,
  AssetSchema,
  type CatalogAdminService,
} from "../catalog/index.ts";
import type { LedgerAdminService, LedgerReport } from "../ledger/index.ts";

const OneAsset = Type.Object({ result: AssetSchema });

/** What the asset and ledger routes of the admin API use. */
export interface AdminMoneyDeps {
  readonly catalogAdmin: CatalogAdminService;
  readonly ledgerAdmin: LedgerAdminService;
}

export function adminMoneyRoutes(app: FastifyInstance, { catalogAdmin, ledgerAdmin }: AdminMoneyDeps): void {
  app.put<{ Params: { asset_id: string }; Body: AssetChangesBody }>(
    "/admin/assets/:asset_id",
    {
      schema: {
        params: Type.Object({ asset_id: Type.String({ maxLength: 64 }) }),
        body: AssetChangesBody,
        response: { 200: OneAsset, 201: OneAsset },
      },
    },
    async (request, reply) => {
      const { usd_rate, ...rest } = request.body;
      const changes: AssetChanges = { ...rest };
      if (usd_rate !== undefined) {
        if (usd_rate === null) changes.usd_rate = null;
        else {
          changes.usd_rate = decimalField(
            usd_rate,
            ["body", "usd_rate"],
            (v) => v > 0n,
            "a decimal > 0 with at most 8 places",
          );
        }
      }
      const result = await catalogAdmin.upsertAsset(request.params.asset_id, changes, auditNote(request));
      if (!result.ok) {
        const detail =
          result.error === "asset_in_use"
            ? {
                loc: ["body", result.field],
                msg: "An asset held in accounts or traded in pairs keeps its type and decimal places",
                type: "asset_in_use",
              }
            : result.error === "invalid_asset_id"
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

  // No response schema: fast-json-stringify writes required properties first, so it would move a
  // difference's asset_id ahead of the account fields that come before it today. The answer is
  // still the LedgerReport of ledger/ledger-views.ts (the store builds LedgerDifference values).
  app.get("/admin/ledger/check", async (): Promise<{ result: LedgerReport }> => {
    const differences = await ledgerAdmin.check();
    return { result: { ok: differences.length === 0, differences } };
  });
}
