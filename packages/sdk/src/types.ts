// The partner interface's records and request bodies as TypeScript types, following the contract's
// tables (docs/reference.md §2, §4) and the design's decisions on what the contract leaves open. The records and bodies
// are the types generated from the service's OpenAPI document (wire.ts), narrowed where the SDK is
// stricter than the service. Field names are the wire names (snake_case) so a response can be read
// against the contract without translation. Every decimal is a `string` and stays one: the service
// writes them in scientific notation at times (`0E-8`), and a JS number would round them; use
// `toMoney` for arithmetic.

/** A decimal exactly as the wire carries it, e.g. "100.50000000", "0E-8" or "1.0E-7". */
export type DecimalString = string;

/** An ISO 8601 datetime as the service writes it (UTC, `Z`, microseconds), e.g. "2026-11-21T09:30:00.123456Z". */
export type DatetimeString = string;

/** A calendar date, YYYY-MM-DD. */
export type DateString = string;

// --- Enumerations (docs/reference.md §2, §3): one list, in the protocol package ---

export {
  type AccountPurpose,
  accountPurposes,
  type ClientStatus,
  clientStatuses,
  type DocumentType,
  documentTypes,
  type EmploymentStatus,
  employmentStatuses,
  finalOrderStatuses,
  type OrderSource,
  type OrderStatus,
  type OrderType,
  orderSources,
  orderStatuses,
  orderTypes,
  type TradeSide,
  tradeSides,
} from "@counterpart/protocol";

import type { ClientStatus, DocumentType, OrderSource, OrderStatus } from "@counterpart/protocol";
import type * as wire from "./wire.ts";

// --- Records (docs/reference.md §2) ---
//
// Each record is the generated type of the service's own schema (wire.ts, from docs/openapi.json,
// which the routes generate): a field the service adds, drops or changes changes it here too. The
// field descriptions come from the same schemas.

/** docs/reference.md §2.4. */
export type Asset = wire.Asset;

/** docs/reference.md §2.8: the id and the country's English name. */
export type Country = wire.Country;

/** docs/reference.md §2.5. */
export type AssetPair = wire.AssetPair;

/** docs/reference.md §2.6. Fetch a fresh one before any financial decision: balances change between calls. */
export type Balance = wire.Balance;

/** docs/reference.md §2.7. Not final: the order returned by execution is the source of truth. */
export type Quote = wire.Quote;

/**
 * docs/reference.md §2.3: one shape for every order type. Read `type` before `debit`/`credit`:
 * deposit: debit = amount deposited, credit null; withdrawal: credit = amount withdrawn, debit null;
 * buy: debit = base received, credit = quote paid; sell: debit = quote received, credit = base given.
 */
export interface Order extends Omit<wire.Order, "source"> {
  /** One of `OrderSource`; the contract allows further platform-specific values. */
  source: OrderSource | (string & {});
}

export type Address = wire.Client["address"];

/** Employment as a client record returns it: the text fields the status does not need are null. */
export type EmploymentRecord = wire.Client["employment"];

/** docs/reference.md §2.1. */
export type Client = wire.Client;

/** docs/reference.md §2.2. The file links are valid for 900 seconds: fetch the document again rather than store them. */
export type ClientDocument = wire.Document;

/** A paginated list (docs/reference.md §4, §8): `total` counts every match, the last page may hold fewer. */
export interface Page<T> {
  items: T[];
  total: number;
  page: number;
  page_size: number;
}

// --- Request bodies and query parameters ---

/**
 * Employment in a create or update body: the table of docs/reference.md §2.1 as types. Every status needs
 * company, job_industry and job_title; all but self_employed need job_level, and self_employed
 * must not send one.
 */
export type EmploymentInput =
  | {
      status: "employed" | "unemployed" | "housewife" | "retired";
      company: string;
      job_industry: string;
      job_level: string;
      job_title: string;
    }
  | {
      status: "self_employed";
      company: string;
      job_industry: string;
      job_level?: null;
      job_title: string;
    };

// The request bodies below extend the generated ones and only narrow them: the compiler refuses a
// field the SDK would let a partner send that the service's schema does not take.

/**
 * The fields a client update replaces in full (docs/reference.md §2.1 rule 6): the generated body, with
 * employment narrowed to the conditional table.
 */
export interface ClientUpdateRequest extends wire.UpdateClientBody {
  employment: EmploymentInput;
}

/** POST /v1/partner/clients: the update fields plus the ones fixed at creation. */
export interface ClientCreateRequest extends wire.CreateClientBody {
  employment: EmploymentInput;
}

/** POST /v1/partner/deposits and /v1/partner/withdrawals take the same body. */
export type FundingRequest = wire.CreateDepositBody;

export type QuoteRequest = wire.CreateQuoteBody;

export interface ExecuteRequest extends wire.ExecuteQuoteBody {
  /** Optional; without one the order can be fetched only by id, and a lost response cannot be recovered. */
  partner_order_ref?: string;
}

/** A datetime filter: an ISO 8601 string (read as UTC without an offset) or a Date. */
export type DatetimeInput = string | Date;

/** Page bounds of every paginated list: page from 1, page_size 1 to 100. */
export type PageParams = Pick<wire.ListOrdersQuery, "page" | "page_size">;

export interface OrderListParams extends PageParams {
  partner_client_id?: string;
  source?: readonly OrderSource[];
  status?: readonly OrderStatus[];
  from_datetime?: DatetimeInput;
  to_datetime?: DatetimeInput;
}

export interface ClientListParams extends PageParams {
  status?: readonly ClientStatus[];
  from_datetime?: DatetimeInput;
  to_datetime?: DatetimeInput;
}

export interface DocumentListParams extends PageParams {
  type?: readonly DocumentType[];
}

/** One file of a document upload. The service judges the format by the bytes, not by these labels. */
export interface DocumentFile {
  data: Uint8Array;
  /** Sent as the part's filename; defaults to the field name. */
  filename?: string;
  /** Sent as the part's Content-Type; defaults to application/octet-stream. */
  contentType?: string;
}

export interface DocumentUploadRequest {
  type: DocumentType;
  /** Required. JPEG, PNG, HEIC, HEIF or PDF, at most 5 MiB. */
  front: DocumentFile;
  /** For two-sided documents. */
  back?: DocumentFile;
}

/**
 * What creating an order returns. `replayed` is true when this call did not create the order: the
 * service answered 2020 (the reference was already used) and the SDK fetched the order the
 * reference names, which the same request created earlier (a retry after a lost response, or a
 * re-run after a crash). Check `order.status`: `completed` means the money moved once.
 */
export interface OrderResult {
  order: WithResponse<Order>;
  replayed: boolean;
}

/**
 * The response a returned value came from: `requestId` is the service's X-Request-Id (quote it
 * to support), null only if the response had none. For a replayed order it is the lookup's.
 */
export interface ResponseInfo {
  readonly requestId: string | null;
  readonly status: number;
  readonly method: string;
  /** The path and query as sent, e.g. "/v1/partner/orders?page=2". */
  readonly target: string;
}

/**
 * A value the SDK returned: the record as the service sent it, plus `lastResponse`, which is
 * non-enumerable (JSON.stringify and spreading leave it out).
 */
export type WithResponse<T> = T & { readonly lastResponse: ResponseInfo };
