// The audit trail's entry as the admin API shows it.

import { type Static, Type } from "typebox";
import { pageSchema } from "../../platform/wire-schemas.ts";
import type { AuditRow } from "./audit-store.ts";

export const AuditEntrySchema = Type.Object({
  id: Type.Integer(),
  at: Type.String(),
  actor: Type.Object({
    kind: Type.Union([Type.Literal("operator"), Type.Literal("token"), Type.Literal("system")]),
    id: Type.Union([Type.String(), Type.Null()]),
    email: Type.Union([Type.String(), Type.Null()]),
  }),
  action: Type.String(),
  target_type: Type.String(),
  target_id: Type.String(),
  before: Type.Unknown(),
  after: Type.Unknown(),
  reason: Type.Union([Type.String(), Type.Null()]),
});
export type AuditEntry = Static<typeof AuditEntrySchema>;
export const AuditPageSchema = pageSchema("AuditPage", AuditEntrySchema);
export type AuditPage = Static<typeof AuditPageSchema>;

export function auditView(row: AuditRow): AuditEntry {
  return {
    id: Number(row.id),
    at: row.at,
    actor: { kind: row.actor_kind, id: row.actor_id, email: row.actor_email },
    action: row.action,
    target_type: row.target_type,
    target_id: row.target_id,
    before: row.before ?? null,
    after: row.after ?? null,
    reason: row.reason,
  };
}
