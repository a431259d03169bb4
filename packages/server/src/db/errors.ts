// PostgreSQL's error codes (SQLSTATE) are recognised here and nowhere else: services and the HTTP
// layer ask what a failure means (a unique key taken, funds short, the database out of reach),
// never which code the driver reported.

import { DatabaseUnavailableError } from "./database.ts";

const uniqueViolationCode = "23505";
/** Raised by fund_order() (migration 0008) when a withdrawal's available balance does not cover it. */
const insufficientFundsCode = "CP001";
/** Raised by execute_quote() (migration 0009) when the token's quote cannot be spent (any more). */
const unspendableTokenCode = "CP002";
/** Raised by record_signature() (migration 0018): the partner's credentials are not the ones given. */
const credentialsChangedCode = "CP003";
/** Raised by record_signature() (migration 0018): the request's signature was already recorded. */
const signatureUsedCode = "CP004";
/** Raised by funding_facts_held() (migration 0022): the client or the asset kept has changed. */
const fundingFactsChangedCode = "CP005";
/** Raised by client_standing_held() (migration 0023): the client kept with a quote has changed. */
const clientStandingChangedCode = "CP006";
/** Serialisation failures and deadlocks: the transaction can be run again. */
const retryableCodes = new Set(["40001", "40P01"]);

/** What a failed statement means to the service, when it means something expected. */
export type DatabaseError =
  | { kind: "unique_violation"; constraint: string }
  | { kind: "insufficient_funds" }
  | { kind: "unspendable_token" }
  | { kind: "credentials_changed" }
  | { kind: "signature_used" }
  | { kind: "funding_facts_changed" }
  | { kind: "client_standing_changed" };

function pgErrorCode(err: unknown): string | undefined {
  const code = typeof err === "object" && err !== null ? (err as { code?: unknown }).code : undefined;
  return typeof code === "string" ? code : undefined;
}

function pgConstraint(err: unknown): string | undefined {
  return typeof err === "object" && err !== null ? (err as { constraint?: string }).constraint : undefined;
}

/** The expected failure behind a database error, or null for any other error. */
export function databaseError(err: unknown): DatabaseError | null {
  switch (pgErrorCode(err)) {
    case uniqueViolationCode:
      return { kind: "unique_violation", constraint: pgConstraint(err) ?? "" };
    case insufficientFundsCode:
      return { kind: "insufficient_funds" };
    case unspendableTokenCode:
      return { kind: "unspendable_token" };
    case credentialsChangedCode:
      return { kind: "credentials_changed" };
    case signatureUsedCode:
      return { kind: "signature_used" };
    case fundingFactsChangedCode:
      return { kind: "funding_facts_changed" };
    case clientStandingChangedCode:
      return { kind: "client_standing_changed" };
    default:
      return null;
  }
}

/** The partner's order reference was already taken (orders_partner_order_ref_key, migration 0004). */
export function isDuplicateOrderRef(err: unknown): boolean {
  const e = databaseError(err);
  return e?.kind === "unique_violation" && e.constraint === "orders_partner_order_ref_key";
}

export function isRetryable(err: unknown): boolean {
  return retryableCodes.has(pgErrorCode(err) ?? "");
}

/**
 * The database was out of reach or out of time (db/database.ts classifies what the pg driver
 * reports: no connection, a lost one, a bound run out); also PostgreSQL connection exceptions
 * (class 08), too many connections (53300), a server shutting down or starting (57P01-57P03), and
 * the socket errors of an unreachable server, as other drivers report them.
 */
export function isUnavailable(err: unknown): boolean {
  if (err instanceof DatabaseUnavailableError) return true;
  const code = pgErrorCode(err);
  if (code === undefined) return false;
  return (
    code.startsWith("08") ||
    code === "53300" ||
    code === "57P01" ||
    code === "57P02" ||
    code === "57P03" ||
    code === "ECONNREFUSED" ||
    code === "ECONNRESET" ||
    code === "ETIMEDOUT"
  );
}

/**
 * The statement itself raised: PostgreSQL answered it with an error of its own (a constraint, a
 * function's RAISE, a deadlock), with the connection and the statement's bounds fine. Such a
 * statement wrote nothing, and its parts can be run again apart (modules/ledger/order-queue.ts,
 * RetryAlone).
 */
export function raisedByStatement(err: unknown): boolean {
  return pgErrorCode(err) !== undefined && !isUnavailable(err);
}

/**
 * One order of a batch the database refused, as its own statement would have failed
 * (modules/ledger/order-queue.ts): the SQLSTATE and the constraint are where the functions above
 * read them from a driver's error.
 */
export class RefusedInBatch extends Error {
  readonly code: string;
  readonly constraint: string | undefined;
  constructor(code: string, constraint: string | undefined) {
    super(`the order was refused with SQLSTATE ${code}${constraint === undefined ? "" : ` (${constraint})`}`);
    this.name = "RefusedInBatch";
    this.code = code;
    this.constraint = constraint;
  }
}

/** The columns a batch's function answers for each order besides the order (migrations 0024, 0025). */
export interface BatchItem {
  item: number;
  error_code: string | null;
  error_constraint: string | null;
}

/**
 * Each order's outcome from a batch function's rows, in the calls' order: the order, or a
 * RefusedInBatch with its SQLSTATE and constraint. Throws on rows that do not answer each of the
 * `n` orders once, in order (a programming error).
 */
export function batchOutcomes<T>(
  fn: string,
  rows: readonly (T & BatchItem)[],
  n: number,
): (T | RefusedInBatch)[] {
  if (rows.length !== n) throw new Error(`${fn} answered ${rows.length} rows for ${n} orders`);
  return rows.map(({ item, error_code, error_constraint, ...order }, i) => {
    if (item !== i + 1) throw new Error(`${fn} answered order ${item} at ${i + 1}`);
    if (error_code !== null) return new RefusedInBatch(error_code, error_constraint || undefined);
    return order as T;
  });
}
