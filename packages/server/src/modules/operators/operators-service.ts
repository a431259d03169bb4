// Operator accounts and their console sessions (docs/decisions.md, "Operator accounts"): accounts
// with a role, created by an admin (the CLI, over the admin API); sign-in by password (scrypt) or,
// in the sandbox, by a one-time link; sessions with an idle timeout and a lifetime; refused
// sign-ins throttled per e-mail address and per IP address. Expected failures are values.

import crypto from "node:crypto";
import { limits } from "../../config/limits.ts";
import type { Db } from "../../db/database.ts";
import type { OperatorRole } from "../../db/schema.ts";
import { isoFromMs } from "../../db/time.ts";
import { inTransaction, type Tx } from "../../db/transaction.ts";
import type { Clock } from "../../platform/clock.ts";
import type { Random } from "../../platform/random.ts";
import { isUuid } from "../../platform/uuid.ts";
import { type AuditNote, missingReason, recordAudit } from "../audit/index.ts";
import { type Actor, type OperatorView, operatorView } from "./operator-views.ts";
import {
  clearSignInFailures,
  countSignInFailures,
  deleteOperatorSessions,
  deleteSession,
  findOperator,
  findOperatorByEmail,
  findSession,
  insertOperator,
  insertSession,
  insertSignInLink,
  listOperators,
  lockOperator,
  type OperatorRow,
  purgeEndedOperatorRecords,
  recordSignInFailure,
  touchSession,
  updateOperator,
  useSignInLink,
} from "./operators-store.ts";
import { decoyHash, hashPassword, passwordLengthMax, passwordLengthMin, verifyPassword } from "./password.ts";

export type OperatorFailure =
  | { error: "operator_not_found" }
  | { error: "invalid_email" }
  | { error: "email_taken" }
  | { error: "invalid_password"; min: number; max: number }
  | { error: "sign_in_links_off" }
  | { error: "operator_disabled" }
  | { error: "reason_required" };

export type OperatorResult = { ok: true; operator: OperatorView } | ({ ok: false } & OperatorFailure);

export interface NewSession {
  /** The cookie's value; only its SHA-256 is stored. */
  token: string;
  csrfToken: string;
  operator: OperatorView;
}

export type SignInResult =
  | { ok: true; session: NewSession }
  | { ok: false; error: "bad_credentials" }
  | { ok: false; error: "throttled"; retryAfterS: number };

/** A live session: who it is, and the token its state-changing requests must echo. */
export interface LiveSession {
  actor: Extract<Actor, { kind: "operator" }>;
  operator: OperatorView;
  csrfToken: string;
}

const emailPattern = /^[^\s@]{1,64}@[^\s@]{1,189}\.[^\s@]{1,63}$/;

export const sha256Hex = (token: string) => crypto.createHash("sha256").update(token).digest("hex");

export class OperatorsService {
  readonly #db: Db;
  readonly #clock: Clock;
  readonly #random: Random;
  readonly #signInLinks: boolean;

  /** `signInLinks`: whether one-time sign-in links may be issued (the sandbox only). */
  constructor(db: Db, clock: Clock, random: Random, options: { signInLinks: boolean }) {
    this.#db = db;
    this.#clock = clock;
    this.#random = random;
    this.#signInLinks = options.signInLinks;
  }

  #now(): string {
    return isoFromMs(this.#clock.nowMs());
  }

  #token(): string {
    return this.#random.bytes(32).toString("base64url");
  }

  /** Errors: invalid_email, invalid_password, email_taken. */
  async create(
    input: { email: string; role: OperatorRole; password: string | null },
    note: AuditNote,
  ): Promise<OperatorResult> {
    const email = input.email.trim().toLowerCase();
    if (!emailPattern.test(email)) return { ok: false, error: "invalid_email" };
    let hash: string | null = null;
    if (input.password !== null) {
      const bad = checkPassword(input.password);
      if (bad !== null) return { ok: false, ...bad };
      hash = await hashPassword(input.password, this.#random);
    }
    const row = await inTransaction(this.#db, async (tx) => {
      const inserted = await insertOperator(tx, {
        id: this.#random.uuid(),
        email,
        role: input.role,
        password_hash: hash,
        created_at: this.#now(),
      });
      if (inserted !== undefined) {
        await this.#audit(tx, note, "operator.create", inserted.id, null, operatorView(inserted));
      }
      return inserted;
    });
    return row ? { ok: true, operator: operatorView(row) } : { ok: false, error: "email_taken" };
  }

  async list(): Promise<OperatorView[]> {
    return (await listOperators(this.#db)).map(operatorView);
  }

  /** Errors: operator_not_found. */
  async show(id: string): Promise<OperatorResult> {
    const row = isUuid(id) ? await findOperator(this.#db, id) : undefined;
    return row ? { ok: true, operator: operatorView(row) } : { ok: false, error: "operator_not_found" };
  }

  /** A new role takes effect at once: the operator's sessions end. Errors: operator_not_found. */
  async setRole(id: string, role: OperatorRole, note: AuditNote): Promise<OperatorResult> {
    return this.#change(id, note, "operator.role", () => ({ role }));
  }

  /**
   * Disabling ends the operator's sessions and needs a reason; a disabled operator cannot sign in.
   * Errors: operator_not_found, reason_required.
   */
  async setActive(id: string, active: boolean, note: AuditNote): Promise<OperatorResult> {
    if (!active && missingReason(note)) return { ok: false, error: "reason_required" };
    return this.#change(id, note, "operator.active", () => ({ active }));
  }

  /** Sets (or replaces) the password; the operator's sessions end. Errors: operator_not_found, invalid_password. */
  async setPassword(id: string, password: string, note: AuditNote): Promise<OperatorResult> {
    const bad = checkPassword(password);
    if (bad !== null) return { ok: false, ...bad };
    const hash = await hashPassword(password, this.#random);
    return this.#change(id, note, "operator.password", () => ({ password_hash: hash }));
  }

  /** A change of the account, its audit entry (the account as shown: never a hash), and the end of its sessions, in one transaction. */
  async #change(
    id: string,
    note: AuditNote,
    action: string,
    changes: (row: OperatorRow) => Partial<Pick<OperatorRow, "role" | "active" | "password_hash">>,
  ): Promise<OperatorResult> {
    if (!isUuid(id)) return { ok: false, error: "operator_not_found" };
    const row = await inTransaction(this.#db, async (tx) => {
      const before = await lockOperator(tx, id);
      if (before === undefined) return undefined;
      const after = await updateOperator(tx, id, changes(before), this.#now());
      if (after === undefined) return undefined;
      await deleteOperatorSessions(tx, id);
      await this.#audit(tx, note, action, id, operatorView(before), operatorView(after));
      return after;
    });
    return row ? { ok: true, operator: operatorView(row) } : { ok: false, error: "operator_not_found" };
  }

  /**
   * A one-time sign-in link's token, good for limits.operatorSignInLinkMs, for the sandbox (or an
   * account without a password there). Errors: operator_not_found, operator_disabled, sign_in_links_off.
   */
  async issueSignInLink(
    id: string,
    note: AuditNote,
  ): Promise<{ ok: true; token: string; expiresAt: string } | ({ ok: false } & OperatorFailure)> {
    if (!this.#signInLinks) return { ok: false, error: "sign_in_links_off" };
    const row = isUuid(id) ? await findOperator(this.#db, id) : undefined;
    if (row === undefined) return { ok: false, error: "operator_not_found" };
    if (!row.active) return { ok: false, error: "operator_disabled" };
    const token = this.#token();
    const nowMs = this.#clock.nowMs();
    const expiresAt = isoFromMs(nowMs + limits.operatorSignInLinkMs);
    await inTransaction(this.#db, async (tx) => {
      await insertSignInLink(tx, {
        token_sha256: sha256Hex(token),
        operator_id: id,
        created_at: isoFromMs(nowMs),
        expires_at: expiresAt,
      });
      await this.#audit(tx, note, "operator.sign_in_link", id, null, { expires_at: expiresAt });
    });
    return { ok: true, token, expiresAt };
  }

  /**
   * Signs in by e-mail and password. Every attempt is first counted as refused (so that many
   * guesses sent at once are throttled as well as guesses sent in a row); a success takes its own
   * count back and clears the address's. Past the bounds of limits.ts, attempts are refused
   * without looking at the password. An unknown address costs the same hashing as a known one.
   */
  async signIn(emailGiven: string, password: string, ip: string): Promise<SignInResult> {
    const email = emailGiven.trim().toLowerCase();
    const nowMs = this.#clock.nowMs();
    const now = isoFromMs(nowMs);
    const since = isoFromMs(nowMs - limits.operatorSignInWindowMs);
    const emailKey = `email:${email}`;
    const ipKey = `ip:${ip}`;
    await recordSignInFailure(this.#db, [emailKey, ipKey], now, since);
    const counts = await countSignInFailures(this.#db, [emailKey, ipKey], since);
    if (
      (counts.get(emailKey) ?? 0) > limits.operatorSignInFailuresPerEmailMax ||
      (counts.get(ipKey) ?? 0) > limits.operatorSignInFailuresPerIpMax
    ) {
      return { ok: false, error: "throttled", retryAfterS: Math.ceil(limits.operatorSignInWindowMs / 1000) };
    }
    const row = await findOperatorByEmail(this.#db, email);
    const stored = row?.active === true ? row.password_hash : null;
    const matches = await verifyPassword(password, stored ?? decoyHash);
    if (row === undefined || stored === null || !matches) return { ok: false, error: "bad_credentials" };
    await clearSignInFailures(this.#db, emailKey);
    return { ok: true, session: await this.#startSession(row) };
  }

  /** Signs in by a one-time link's token. */
  async signInWithLink(token: string): Promise<SignInResult> {
    if (!this.#signInLinks || token.length > 128) return { ok: false, error: "bad_credentials" };
    const operatorId = await useSignInLink(this.#db, sha256Hex(token), this.#now());
    const row = operatorId === undefined ? undefined : await findOperator(this.#db, operatorId);
    if (row === undefined || !row.active) return { ok: false, error: "bad_credentials" };
    return { ok: true, session: await this.#startSession(row) };
  }

  async #startSession(row: OperatorRow): Promise<NewSession> {
    const token = this.#token();
    const csrfToken = this.#token();
    const now = this.#now();
    await insertSession(this.#db, {
      token_sha256: sha256Hex(token),
      operator_id: row.id,
      csrf_token: csrfToken,
      created_at: now,
      last_seen_at: now,
    });
    const updated = (await updateOperator(this.#db, row.id, { last_sign_in_at: now }, now)) ?? row;
    return { token, csrfToken, operator: operatorView(updated) };
  }

  /**
   * The session a cookie's token opens, or null: unknown, idle past limits.operatorSessionIdleMs,
   * older than limits.operatorSessionLifetimeMs, or its operator disabled (an ended session is
   * deleted). A live session's last-seen time moves on.
   */
  async authenticate(token: string): Promise<LiveSession | null> {
    if (token.length === 0 || token.length > 128) return null;
    const hash = sha256Hex(token);
    const found = await findSession(this.#db, hash);
    if (found === undefined) return null;
    const { session, operator } = found;
    const nowMs = this.#clock.nowMs();
    const lastSeen = Date.parse(session.last_seen_at);
    const created = Date.parse(session.created_at);
    if (
      !operator.active ||
      !(nowMs - lastSeen < limits.operatorSessionIdleMs) ||
      !(nowMs - created < limits.operatorSessionLifetimeMs)
    ) {
      await deleteSession(this.#db, hash);
      return null;
    }
    if (nowMs - lastSeen >= limits.operatorSessionTouchMs)
      await touchSession(this.#db, hash, isoFromMs(nowMs));
    return {
      actor: { kind: "operator", id: operator.id, email: operator.email, role: operator.role },
      operator: operatorView(operator),
      csrfToken: session.csrf_token,
    };
  }

  #audit(
    tx: Tx,
    note: AuditNote,
    action: string,
    id: string,
    before: unknown,
    after: unknown,
  ): Promise<void> {
    return recordAudit(tx, this.#clock, note, {
      action,
      targetType: "operator",
      targetId: id,
      before,
      after,
    });
  }

  /**
   * Deletes ended sessions (idle or past their lifetime), expired sign-in links and refused
   * sign-ins older than the throttle's window: none of them can open anything any more, and a
   * session or a link is otherwise deleted only when it is next presented. Run by the housekeeping
   * leader (main.ts).
   */
  async purgeEnded(): Promise<{ sessions: number; links: number; failures: number }> {
    const nowMs = this.#clock.nowMs();
    return purgeEndedOperatorRecords(this.#db, {
      nowIso: isoFromMs(nowMs),
      idleBeforeIso: isoFromMs(nowMs - limits.operatorSessionIdleMs),
      startedBeforeIso: isoFromMs(nowMs - limits.operatorSessionLifetimeMs),
      failuresBeforeIso: isoFromMs(nowMs - limits.operatorSignInWindowMs),
    });
  }

  async signOut(token: string): Promise<void> {
    if (token.length === 0 || token.length > 128) return;
    await deleteSession(this.#db, sha256Hex(token));
  }
}

function checkPassword(password: string): { error: "invalid_password"; min: number; max: number } | null {
  const length = [...password].length;
  if (length < passwordLengthMin || length > passwordLengthMax) {
    return { error: "invalid_password", min: passwordLengthMin, max: passwordLengthMax };
  }
  return null;
}
