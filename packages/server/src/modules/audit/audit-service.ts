// The audit trail (docs/decisions.md, "Audit trail"): what every operator service writes, in its
// own transaction, for each state-changing action, and the paged, filtered reading of it.

import type { Db } from "../../db/database.ts";
import { isoFromMs } from "../../db/time.ts";
import type { Tx } from "../../db/transaction.ts";
import type { Clock } from "../../platform/clock.ts";
import type { Actor } from "../operators/index.ts";
import { type AuditCursor, type AuditFilter, insertAudit, listAudit, listAuditAfter } from "./audit-store.ts";
import type { AuditEntry } from "./audit-views.ts";
import { type AuditPage, auditView } from "./audit-views.ts";

/** Who acts and why: passed by the admin routes (and the CLI through them) to every change. */
export interface AuditNote {
  readonly actor: Actor;
  /** Required by the actions that need one (docs/decisions.md, "Audit trail"); null otherwise. */
  readonly reason: string | null;
}

/** Changes the service makes by itself (the sandbox's demo partner at start, test set-up). */
export const systemNote: AuditNote = { actor: { kind: "system", role: "admin" }, reason: null };

export const reasonLengthMax = 1000;

/**
 * A character a reader sees: not white space, not a control or format character (a zero-width
 * space, a joiner, a byte-order mark), nor any other that renders as nothing.
 */
const visible = /[^\s\p{Cc}\p{Cf}\p{Z}\p{Default_Ignorable_Code_Point}]/u;

/** The reason as kept: trimmed, and null when no character of it can be seen. */
export function reasonOf(note: AuditNote): string | null {
  const r = note.reason?.trim() ?? "";
  return visible.test(r) ? r.slice(0, reasonLengthMax) : null;
}

/**
 * Whether a change that needs a reason (client status changes, activations and deactivations,
 * partner and operator disabling, price pins) lacks one. Every operator action needs it, whatever
 * the channel: a console session, the CLI or a script with the bearer token (docs/decisions.md,
 * "Audit trail"). Only the service's own changes (`system`: the sandbox's demo partner, test
 * set-up) go without one.
 */
export function missingReason(note: AuditNote): boolean {
  return note.actor.kind !== "system" && reasonOf(note) === null;
}

/** One entry of the trail, in the transaction `tx` that makes the change. */
export async function recordAudit(
  tx: Tx,
  clock: Clock,
  note: AuditNote,
  entry: { action: string; targetType: string; targetId: string; before: unknown; after: unknown },
): Promise<void> {
  const actor = note.actor;
  await insertAudit(tx, {
    at: isoFromMs(clock.nowMs()),
    actor_kind: actor.kind,
    actor_id: actor.kind === "operator" ? actor.id : null,
    actor_email: actor.kind === "operator" ? actor.email : null,
    action: entry.action,
    target_type: entry.targetType,
    target_id: entry.targetId,
    before: entry.before,
    after: entry.after,
    reason: reasonOf(note),
  });
}

export class AuditService {
  readonly #db: Db;

  constructor(db: Db) {
    this.#db = db;
  }

  async list(filter: AuditFilter, page: number, pageSize: number): Promise<AuditPage> {
    const { rows, total } = await listAudit(this.#db, filter, page, pageSize);
    return { items: rows.map(auditView), total, page, page_size: pageSize };
  }

  /** A keyset page of the trail (the console's): its entries and the cursor of the next page, if any. */
  async page(
    filter: AuditFilter,
    after: AuditCursor | null,
    pageSize: number,
  ): Promise<{ items: AuditEntry[]; next: AuditCursor | null }> {
    const rows = await listAuditAfter(this.#db, filter, after, pageSize + 1);
    const last = rows.length > pageSize ? rows[pageSize - 1] : undefined;
    return {
      items: rows.slice(0, pageSize).map(auditView),
      next: last === undefined ? null : { at: last.at, id: last.id },
    };
  }
}

export type { AuditCursor, AuditFilter };
