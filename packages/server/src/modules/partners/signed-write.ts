// A signed write recorded in its change's statement (docs/decisions.md, "A signed write recorded in
// its change's statement"): the request's replay record made by the statement that makes its
// change, in the same commit, instead of by a statement and a commit of its own.

import type { ErrorName } from "@counterpart/protocol";
import { databaseError, isUnavailable } from "../../db/errors.ts";
import type { AuthResult } from "./partner-auth.ts";
import type { SignatureRecord, SignatureToRecord } from "./partners-store.ts";

/**
 * A state-changing request accepted by the credentials its process kept, whose signature is
 * recorded by the statement that makes its change. That statement first checks that the partner's
 * row still holds the credentials and budgets the request was judged by (else the request is
 * judged again by the row, which this process then keeps), then records the signature, and only
 * then changes anything (partnerArgument, modules/partners/partners-store.ts). Until the route
 * reports what the statement did, the request is not authenticated: a request that ends without
 * that statement recording (refused by a check before it, or by what it raised) is settled as
 * every other state-changing request is (its signature recorded by a statement of its own) before
 * anything is answered.
 */
export class SignedWrite implements SignatureToRecord {
  readonly partnerId: string;
  readonly signature: Uint8Array;
  readonly expiresAtIso: string;
  readonly publicKeys: readonly string[];
  readonly allowedIps: readonly string[];
  /** The rate-limit budgets the request was taken from (null: the default). */
  readonly budgets: readonly [number | null, number | null, number | null];
  readonly #accepted: AuthResult;
  readonly #judgeAgain: () => Promise<AuthResult>;
  #result: AuthResult | null = null;
  #beforeWrite: ((settled: AuthResult & { ok: true }) => Promise<ErrorName | null>) | null = null;

  constructor(
    accepted: AuthResult & { ok: true },
    record: SignatureRecord,
    judgeAgain: () => Promise<AuthResult>,
  ) {
    this.partnerId = accepted.partnerId;
    this.signature = record.signature;
    this.expiresAtIso = record.expiresAtIso;
    this.publicKeys = record.judgedBy.public_keys;
    this.allowedIps = record.judgedBy.allowed_ips;
    const { rate_limit_reads, rate_limit_writes, rate_limit_quotes } = record.judgedBy;
    this.budgets = [rate_limit_reads, rate_limit_writes, rate_limit_quotes];
    this.#accepted = accepted;
    this.#judgeAgain = judgeAgain;
  }

  /** Whether the request is still to be settled: no statement has recorded its signature. */
  get open(): boolean {
    return this.#result === null;
  }

  /** The change's statement recorded the signature: the request is authenticated. */
  recorded(): void {
    if (this.#result === null) this.#result = this.#accepted;
  }

  /** The change's statement found the signature already recorded: the request is a replay. */
  replayed(): void {
    if (this.#result === null) this.#result = { ok: false, cause: "replay" };
  }

  /**
   * The change's statement failed with its connection: whether it committed is not known, so the
   * request keeps the answer it has (a 503), and is not judged again (it would find its own record).
   */
  undecided(): void {
    if (this.#result === null) this.#result = this.#accepted;
  }

  /**
   * The request's authentication: as the change's statement settled it, or else judged again by
   * the partner's row, its signature recorded by a statement of its own (or in Redis).
   */
  async settle(): Promise<AuthResult> {
    if (this.#result === null) this.#result = await this.#judgeAgain();
    return this.#result;
  }

  /**
   * What the HTTP layer does once the request is judged again before its change (take it from the
   * budget the row holds now, when that is not the one it was taken from): an error to answer
   * instead, or null to go on.
   */
  set beforeWrite(step: (settled: AuthResult & { ok: true }) => Promise<ErrorName | null>) {
    this.#beforeWrite = step;
  }

  /**
   * Settles the request by the partner's row before its change is made without the statement that
   * records: the error to answer instead of making it, or null.
   */
  async settleForWrite(): Promise<ErrorName | null> {
    const settled = await this.settle();
    if (!settled.ok) return "unauthorized";
    return this.#beforeWrite === null ? null : this.#beforeWrite(settled);
  }
}

/** The request, judged again by the partner's row, is answered by this error instead. */
export class WriteRefused extends Error {
  readonly errorName: ErrorName;
  constructor(name: ErrorName) {
    super(name);
    this.errorName = name;
  }
}

/**
 * Makes a change whose statement records the request's signature while `signed` is open
 * (`change(signed)`, whose statement takes partnerArgument(…, signed)), and tells `signed` what the
 * statement did. When the partner's credentials changed since they were kept, the request is
 * settled by the row first (a refusal throws WriteRefused), and the change is made without the
 * record (`change(undefined)`).
 * A replay throws WriteRefused("unauthorized"); anything else the statement raises is rethrown, and
 * the request is settled before its answer leaves.
 */
export async function changeSigned<T>(
  signed: SignedWrite | undefined,
  change: (signed: SignedWrite | undefined) => Promise<T>,
): Promise<T> {
  if (signed === undefined || !signed.open) return change(undefined);
  try {
    const result = await change(signed);
    signed.recorded();
    return result;
  } catch (err) {
    const kind = databaseError(err)?.kind;
    if (kind === "signature_used") {
      signed.replayed();
      throw new WriteRefused("unauthorized");
    }
    // The connection failed: whether the statement committed, change and record, is not known,
    // so the request's answer (503) stands, never a 401 from finding its own record.
    if (isUnavailable(err)) signed.undecided();
    if (kind !== "credentials_changed") throw err;
  }
  const refusal = await signed.settleForWrite();
  if (refusal !== null) throw new WriteRefused(refusal);
  return change(undefined);
}
