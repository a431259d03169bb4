// What the bank test records and what its checker judges: every operation's invocation and end
// (an answer, or an indeterminate end: timeout, reset, refused connection, 5xx), the faults
// injected, the API processes that exited on their own, and the final state read through the
// partner API once the faults have healed.

export type PartnerName = "A" | "B";

/** The order shape of the contract, as read from the API. */
export interface Order {
  id: number;
  order_no: string;
  partner_order_ref: string | null;
  partner_client_id: string;
  type: string;
  source: string;
  status: string;
  price: string | null;
  credit: string | null;
  credit_asset_id: string | null;
  debit: string | null;
  debit_asset_id: string | null;
  fee: string;
  fee_asset_id: string;
  vat: string;
  created_at: string;
  transitioned_at: string;
  updated_at: string;
}

export type IndeterminateReason = "timeout" | "reset" | "refused" | "5xx";

export type Outcome =
  | { type: "answer"; status: number; body: unknown }
  | { type: "indeterminate"; reason: IndeterminateReason; status?: number; detail?: string };

export type OpKind =
  | "deposit"
  | "withdrawal"
  | "quote"
  | "execute"
  | "read_balances"
  | "read_order"
  | "list_orders"
  | "invalid"
  | "probe";

export interface Op {
  id: number;
  partner: PartnerName;
  kind: OpKind;
  /** A finer name for the figures: "deposit retry", "replay same body", "race execute", … */
  label: string;
  /** Which API process it was sent to. */
  process: number;
  /** Milliseconds since the start of the run. */
  invokedMs: number;
  endedMs: number;
  outcome: Outcome;
  /** The partner_order_ref a state-changing request carried (null: an execution without one). */
  ref?: string | null;
  client?: string;
  asset?: string;
  amount?: string;
  /** quote: what was asked, the fingerprint of the order an execution of it makes. */
  quote?: { side: "buy" | "sell"; pair: string; baseAmount: string };
  /** execute: the id of the quote operation whose token it used. */
  quoteOp?: number;
  /** read_order: by id or by reference. */
  target?: { id?: number; ref?: string };
  /** invalid, probe: the answers the contract allows ("422", "400/2008", "404", "200-empty"). */
  expect?: readonly string[];
}

export type FaultKind = "kill" | "pg_restart" | "terminate";

export interface FaultRecord {
  kind: FaultKind;
  /** kill: which API process. */
  process?: number;
  injectedMs: number;
  /** When the fault was over (the process restarted and ready, PostgreSQL back); null: it never was. */
  healedMs: number | null;
  /** terminate: backends terminated. */
  detail?: string;
}

export interface ExitRecord {
  process: number;
  atMs: number;
  code: number | null;
  signal: string | null;
  /** The end of what the process wrote. */
  tail: string;
}

export interface Balance {
  balance: string;
  available: string;
}

export interface PartnerFinal {
  /** The clients the harness created. */
  expectedClients: string[];
  /** The clients the partner's own listing shows. */
  listedClients: string[];
  /** client → asset → balance, read through the API. */
  balances: Record<string, Record<string, Balance>>;
  /** Every order of the partner, read page by page through the API. */
  orders: Order[];
  /**
   * The `total` the orders list answered: for the partner's whole list, for each client's
   * (`partner_client_id=`), and under each of `orderTotalFilters` (`status=completed`, …), read
   * after the last page.
   */
  orderTotals: { all: number; byClient: Record<string, number>; byFilter: Record<string, number> };
  /** Reference → the order GET /orders/ref/{ref} returned (null: 404), for indeterminate writes. */
  refLookups: Record<string, Order | null>;
}

/**
 * The filters whose totals are judged: the statuses orders are made with (a deposit or withdrawal
 * completed, a trade completed or rejected), one they never have, and both sources.
 */
export const orderTotalFilters = [
  "status=completed",
  "status=rejected",
  "status=failed",
  "source=bank",
  "source=market",
  "source=bank&status=completed&status=rejected",
] as const;

export interface RunFacts {
  seed: number;
  workers: number;
  /** The least the run must reach: operations and faults per kind. */
  required: { operations: number; workers: number; faults: Record<FaultKind, number> };
  faults: FaultRecord[];
  unexpectedExits: ExitRecord[];
  /** Failures of the harness itself (a worker's exception): the run is not trustworthy. */
  harnessErrors: string[];
  /** The admin ledger check, an extra cross-check (null: not run). */
  ledgerCheckOk: boolean | null;
  /** Recovery: success rate required and the delay after which it is judged. */
  recovery: { afterMs: number; rate: number };
}

export interface History {
  ops: Op[];
  final: Record<PartnerName, PartnerFinal>;
  facts: RunFacts;
}

/** "200", "409/2020", "422", …; an indeterminate end is "?timeout", "?reset", "?503", … */
export function answerKey(outcome: Outcome): string {
  if (outcome.type === "indeterminate") return `?${outcome.status ?? outcome.reason}`;
  const code = (outcome.body as { code?: unknown } | null)?.code;
  if (
    outcome.status >= 400 &&
    outcome.status !== 422 &&
    typeof code === "number" &&
    code !== outcome.status
  ) {
    return `${outcome.status}/${code}`;
  }
  return String(outcome.status);
}

/** The order in a 200 `{result: order}` body, or null. */
export function resultOrder(outcome: Outcome): Order | null {
  if (outcome.type !== "answer" || outcome.status !== 200) return null;
  const result = (outcome.body as { result?: unknown } | null)?.result;
  if (typeof result !== "object" || result === null) return null;
  const o = result as Partial<Order>;
  return typeof o.id === "number" && typeof o.type === "string" ? (result as Order) : null;
}
