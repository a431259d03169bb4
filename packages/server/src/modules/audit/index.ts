export { auditRoutes } from "./audit-routes.ts";
export {
  type AuditCursor,
  type AuditFilter,
  type AuditNote,
  AuditService,
  missingReason,
  reasonLengthMax,
  recordAudit,
  systemNote,
} from "./audit-service.ts";
export { type AuditEntry, AuditEntrySchema, AuditPageSchema } from "./audit-views.ts";
