// The partner interface's records and request bodies as TypeScript types, field for field from the
// spec's tables (§2, §4) and the design's decisions on what the spec leaves open. Field names are the
// wire names (snake_case) so a response can be read against the spec without translation. Every
// decimal is a `string` and stays one: the service writes them in scientific notation at times
// (`0E-8`), and a JS number would round them; use `toMoney` for arithmetic.

/** A decimal exactly as the wire carries it, e.g. "100.50000000", "0E-8" or "1.0E-7". */
export type DecimalString = string;

/** An ISO 8601 datetime as the service writes it (UTC, `Z`, microseconds), e.g. "2026-11-21T09:30:00.123456Z". */
export type DatetimeString = string;

/** A calendar date, YYYY-MM-DD. */
export type DateString = string;

// --- Enumerations (spec §2, §3): one list, in the protocol package ---

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
} from "@counterpart/protocol";

import type {
  AccountPurpose,
  ClientStatus,
  DocumentType,
  EmploymentStatus,
  OrderSource,
  OrderStatus,
  OrderType,
} from "@counterpart/protocol";

export type TradeSide = "buy" | "sell";

// --- Records (spec §2) ---

/** §2.4. */
export interface Asset {
  id: string;
  type: "crypto" | "fiat";
  name_en: string;
  decimal_places: number;
  published: boolean;
  depositable: boolean;
  withdrawable: boolean;
}

/** §2.8; the name is the design's addition (English name of the country). */
export interface Country {
  /** Lower-case two-letter id, e.g. "ae": the value client fields take. */
  id: string;
  name: string;
}

/** §2.5. */
export interface AssetPair {
  /** BASE-QUOTE, e.g. "BTC-AED". */
  id: string;
  base_id: string;
  quote_id: string;
  buy: DecimalString;
  sell: DecimalString;
  tradable: boolean;
}

/** §2.6. Fetch a fresh one before any financial decision: balances change between calls. */
export interface Balance {
  asset_id: string;
  balance: DecimalString;
  /** What trading and withdrawals can use. */
  available_balance: DecimalString;
  balance_usd: DecimalString;
  available_balance_usd: DecimalString;
}

/** §2.7. Not final: the order returned by execution is the source of truth. */
export interface Quote {
  market_price: DecimalString;
  base_amount: DecimalString;
  quote_amount: DecimalString;
  fee_amount: DecimalString;
  vat_percentage: DecimalString | null;
  vat_amount: DecimalString;
  /** Seconds the token stays valid. */
  lifetime: number;
  /** What `quotes.execute` takes; null inside error details. */
  token: string | null;
}

/**
 * §2.3: one shape for every order type. Read `type` before `debit`/`credit`:
 * deposit: debit = amount deposited, credit null; withdrawal: credit = amount withdrawn, debit null;
 * buy: debit = base received, credit = quote paid; sell: debit = quote received, credit = base given.
 */
export interface Order {
  id: number;
  /** A human label such as ORD-20261121-000042, never a lookup key. */
  order_no: string;
  partner_order_ref: string | null;
  partner_client_id: string;
  type: OrderType;
  /** One of `OrderSource`; the spec allows further platform-specific values. */
  source: OrderSource | (string & {});
  status: OrderStatus;
  price: DecimalString | null;
  credit: DecimalString | null;
  credit_asset_id: string | null;
  debit: DecimalString | null;
  debit_asset_id: string | null;
  fee: DecimalString;
  fee_asset_id: string;
  vat: DecimalString;
  created_at: DatetimeString;
  transitioned_at: DatetimeString;
  updated_at: DatetimeString;
}

export interface Address {
  street: string;
  city: string;
  postal_code: string;
  unit: string;
}

/** Employment as a client record returns it: the text fields the status does not need are null. */
export interface EmploymentRecord {
  status: EmploymentStatus;
  company: string | null;
  job_industry: string | null;
  job_level: string | null;
  job_title: string | null;
}

/** §2.1. */
export interface Client {
  id: number;
  partner_client_id: string;
  account_type: "personal" | "corporate";
  name: string | null;
  birth_date: DateString;
  status: ClientStatus;
  active: boolean;
  email: string;
  phone: string;
  residency_id: string;
  citizenship_id: string;
  place_of_birth_id: string;
  national_number: string | null;
  government_id_number: string;
  government_id_doe: DateString;
  residency_visa_number: string | null;
  residency_visa_doe: DateString | null;
  address: Address;
  employment: EmploymentRecord;
  trading_volume: string;
  account_purpose: AccountPurpose[];
  created_at: DatetimeString;
  verified_at: DatetimeString | null;
}

/** §2.2. The file links are valid for 900 seconds: fetch the document again rather than store them. */
export interface ClientDocument {
  id: number;
  type: DocumentType;
  front_file: string;
  back_file: string | null;
  created_at: DatetimeString;
}

/** A paginated list (spec §4, §8): `total` counts every match, the last page may hold fewer. */
export interface Page<T> {
  items: T[];
  total: number;
  page: number;
  page_size: number;
}

// --- Request bodies and query parameters ---

/**
 * Employment in a create or update body: spec §2.1's conditional table as types. Every status needs
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

/** The fields a client update replaces in full (spec §2.1 rule 6). */
export interface ClientUpdateRequest {
  name: string | null;
  email: string;
  /** International format with a leading plus (E.164), e.g. "+971501234567". */
  phone: string;
  /** A country id from `countries.list()`, e.g. "ae". */
  residency_id: string;
  citizenship_id: string;
  national_number?: string | null;
  government_id_number: string;
  government_id_doe: DateString;
  /** Required (with the expiry) when residency_id differs from citizenship_id; else error 2025. */
  residency_visa_number?: string | null;
  residency_visa_doe?: DateString | null;
  address: Address;
  employment: EmploymentInput;
  /** Any string; brackets such as "1000_10000" are recommended. */
  trading_volume: string;
  /** At least one value. */
  account_purpose: AccountPurpose[];
}

/** POST /v1/partner/clients: the update fields plus the ones fixed at creation. */
export interface ClientCreateRequest extends ClientUpdateRequest {
  partner_client_id: string;
  /** Only personal accounts can be created through the interface. */
  account_type: "personal";
  birth_date: DateString;
  place_of_birth_id: string;
}

export interface FundingRequest {
  partner_client_id: string;
  /** A fiat asset id, e.g. "AED". */
  asset_id: string;
  /** A decimal string greater than zero with at most 8 decimal places. */
  amount: DecimalString;
  /** Unique across the partner's orders of every type; what makes a retry safe. */
  partner_order_ref: string;
}

export interface QuoteRequest {
  partner_client_id: string;
  /** A pair id, e.g. "BTC-AED". */
  asset_pair: string;
  side: TradeSide;
  /** Amount of the pair's base asset, as a decimal string. */
  base_amount: DecimalString;
}

export interface ExecuteRequest {
  partner_client_id: string;
  /** The `token` of a quote for the same client, before its lifetime runs out. */
  token: string;
  /** Optional; without one the order can be fetched only by id, and a lost response cannot be recovered. */
  partner_order_ref?: string;
}

/** A datetime filter: an ISO 8601 string (read as UTC without an offset) or a Date. */
export type DatetimeInput = string | Date;

/** Page bounds of every paginated list: page from 1, page_size 1 to 100. */
export interface PageParams {
  page?: number;
  page_size?: number;
}

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
  order: Order;
  replayed: boolean;
}
