// Row types of the database, as the drivers return them: NUMERIC as a string (exact), int8 as a
// number (ids and counts stay far below 2^53), timestamptz as PostgreSQL's UTC text so that
// microseconds survive.

import type {
  AccountPurpose,
  AccountType,
  AssetType,
  ClientStatus,
  DocumentType,
  EmploymentStatus,
  OrderSource,
  OrderStatus,
  OrderType,
  TradeSide,
} from "@counterpart/protocol";
import type { ColumnType, Generated } from "kysely";

// The enumerations of the interface are the protocol's lists (packages/protocol/src/enums.ts),
// which the migrations' CHECK constraints also follow; re-exported for the server's modules.
export type { AccountPurpose, ClientStatus, DocumentType, OrderSource, OrderStatus, OrderType };

/** NUMERIC(38,8) read as text; written from a formatted bigint. */
export type Numeric = ColumnType<string, string, string>;
/** timestamptz read as text in UTC (see db/time.ts); written as ISO text or by default. */
export type Timestamp = ColumnType<string, string | undefined, string>;

export interface PartnersTable {
  id: string;
  name: string;
  /** The newest active key of partner_keys, kept for processes of the version before 0012. */
  public_key_pem: string | null;
  allowed_ips: ColumnType<string[], string[] | undefined, string[]>;
  active: Generated<boolean>;
  fee_rate: ColumnType<string | null, string | null | undefined, string | null>;
  vat_percentage: ColumnType<string | null, string | null | undefined, string | null>;
  /** The operator's budgets per minute (migration 0015); null: the default of config/limits.ts. */
  rate_limit_reads: ColumnType<number | null, number | null | undefined, number | null>;
  rate_limit_writes: ColumnType<number | null, number | null | undefined, number | null>;
  rate_limit_quotes: ColumnType<number | null, number | null | undefined, number | null>;
  /**
   * Kept by the database from partner_keys and this row (migration 0030), never written by the
   * service: the active keys newest first, and the credentials' JSON text a signed read carries.
   */
  active_keys: ColumnType<string[], never, never>;
  credentials: ColumnType<string, never, never>;
  created_at: Timestamp;
  updated_at: Timestamp;
}

export interface CountriesTable {
  id: string;
  name: string;
  supported: Generated<boolean>;
}

export interface AssetsTable {
  id: string;
  type: AssetType;
  name_en: string;
  decimal_places: number;
  published: boolean;
  depositable: boolean;
  withdrawable: boolean;
  usd_rate: Numeric | null;
}

export interface AssetPairsTable {
  id: string;
  base_id: string;
  quote_id: string;
  buy: Numeric;
  sell: Numeric;
  tradable: Generated<boolean>;
  min_volume: Numeric;
  max_volume: Numeric;
  lifetime_s: Generated<number>;
  fee_rate: Generated<string>;
  price_at: Timestamp;
  price_pinned: Generated<boolean>;
}

/** A partner's public keys (migration 0012); at most three have no retired_at. */
export interface PartnerKeysTable {
  id: string;
  partner_id: string;
  label: string;
  public_key_pem: string;
  created_at: Timestamp;
  retired_at: ColumnType<string | null, string | null | undefined, string | null>;
}

export interface UsedSignaturesTable {
  partner_id: string;
  signature: Uint8Array;
  expires_at: Timestamp;
}

export interface SchemaMigrationsTable {
  version: string;
  applied_at: Generated<string>;
}

export interface Database {
  partners: PartnersTable;
  countries: CountriesTable;
  assets: AssetsTable;
  asset_pairs: AssetPairsTable;
  partner_keys: PartnerKeysTable;
  used_signatures: UsedSignaturesTable;
  partner_pairs: PartnerPairsTable;
  clients: ClientsTable;
  document_files: DocumentFilesTable;
  client_documents: ClientDocumentsTable;
  orders: OrdersTable;
  order_counts: OrderCountsTable;
  order_slot_counts: OrderSlotCountsTable;
  order_day_counts: OrderDayCountsTable;
  order_days_rolled: OrderDaysRolledTable;
  accounts: AccountsTable;
  postings: PostingsTable;
  quotes: QuotesTable;
  events: EventsTable;
  webhook_endpoints: WebhookEndpointsTable;
  webhook_deliveries: WebhookDeliveriesTable;
  webhook_attempts: WebhookAttemptsTable;
  schema_migrations: SchemaMigrationsTable;
  operators: OperatorsTable;
  operator_sessions: OperatorSessionsTable;
  operator_sign_in_links: OperatorSignInLinksTable;
  operator_sign_in_failures: OperatorSignInFailuresTable;
  audit_log: AuditLogTable;
}

/** The append-only audit trail (migration 0016). before/after are JSON values, written as text. */
export interface AuditLogTable {
  id: Generated<number>;
  at: Timestamp;
  actor_kind: "operator" | "token" | "system";
  actor_id: string | null;
  actor_email: string | null;
  action: string;
  target_type: string;
  target_id: string;
  before: ColumnType<unknown, string | null, never>;
  after: ColumnType<unknown, string | null, never>;
  reason: string | null;
}

export type OperatorRole = "viewer" | "compliance" | "admin";

/** Operator accounts of the back office (migration 0016). */
export interface OperatorsTable {
  id: string;
  email: string;
  role: OperatorRole;
  password_hash: string | null;
  active: Generated<boolean>;
  created_at: Timestamp;
  updated_at: Timestamp;
  last_sign_in_at: ColumnType<string | null, string | null | undefined, string | null>;
}

export interface OperatorSessionsTable {
  token_sha256: string;
  operator_id: string;
  csrf_token: string;
  created_at: Timestamp;
  last_seen_at: Timestamp;
}

export interface OperatorSignInLinksTable {
  token_sha256: string;
  operator_id: string;
  created_at: Timestamp;
  expires_at: Timestamp;
  used_at: ColumnType<string | null, string | null | undefined, string | null>;
}

export interface OperatorSignInFailuresTable {
  id: Generated<number>;
  key: string;
  at: Timestamp;
}

/** Dates (YYYY-MM-DD) are read as text; see db/database.ts. */
export interface ClientsTable {
  id: Generated<number>;
  partner_id: string;
  partner_client_id: string;
  account_type: AccountType;
  name: string | null;
  birth_date: string;
  status: ClientStatus;
  active: Generated<boolean>;
  email: string;
  phone: string;
  residency_id: string;
  citizenship_id: string;
  place_of_birth_id: string;
  national_number: string | null;
  government_id_number: string;
  government_id_doe: string;
  residency_visa_number: string | null;
  residency_visa_doe: string | null;
  address: ColumnType<ClientAddress, string, string>;
  employment: ColumnType<ClientEmployment, string, string>;
  trading_volume: string;
  account_purpose: AccountPurpose[];
  created_at: Timestamp;
  verified_at: ColumnType<string | null, string | null | undefined, string | null>;
  updated_at: Timestamp;
}

export interface ClientAddress {
  street: string;
  city: string;
  postal_code: string;
  unit: string;
}

export interface ClientEmployment {
  status: EmploymentStatus;
  company?: string | null;
  job_industry?: string | null;
  job_level?: string | null;
  job_title?: string | null;
}

export interface OrdersTable {
  id: Generated<number>;
  partner_id: string;
  client_id: number;
  partner_order_ref: string | null;
  type: OrderType;
  source: OrderSource;
  status: OrderStatus;
  price: Numeric | null;
  credit: Numeric | null;
  credit_asset_id: string | null;
  debit: Numeric | null;
  debit_asset_id: string | null;
  fee: Numeric;
  fee_asset_id: string;
  vat: Numeric;
  created_at: Timestamp;
  transitioned_at: Timestamp;
  updated_at: Timestamp;
}

/** How many orders each client has, kept by a trigger on orders (migration 0019). */
export interface OrderCountsTable {
  client_id: number;
  source: OrderSource;
  status: OrderStatus;
  partner_id: string;
  /** bigint, read as a number (db/database.ts reads int8 so, and refuses one past 2^53) */
  orders: ColumnType<number, never, never>;
}

/** A partner's orders per house slot (client id mod 64), source and status (migration 0028). */
export interface OrderSlotCountsTable {
  partner_id: string;
  status: OrderStatus;
  source: OrderSource;
  slot: number;
  /** bigint, read as a number (db/database.ts reads int8 so, and refuses one past 2^53) */
  orders: ColumnType<number, never, never>;
}

/** A partner's orders of one day (UTC) and kind, once the day is rolled up (migration 0026). */
export interface OrderDayCountsTable {
  partner_id: string;
  /** date, read as YYYY-MM-DD text */
  day: ColumnType<string, string, never>;
  status: OrderStatus;
  source: OrderSource;
  /** bigint, read as a number (db/database.ts reads int8 so, and refuses one past 2^53) */
  orders: ColumnType<number, never, never>;
}

/** How far a partner's days are rolled up: every day before `until` (UTC) is in order_day_counts. */
export interface OrderDaysRolledTable {
  partner_id: string;
  /** date, read as YYYY-MM-DD text */
  until: ColumnType<string, string, string>;
}

export type AccountKind = "client" | "omnibus" | "fee_revenue" | "vat_payable";

export interface AccountsTable {
  id: Generated<number>;
  kind: AccountKind;
  partner_id: string;
  client_id: number | null;
  asset_id: string;
  balance: Numeric;
  held: Generated<string>;
  slot: Generated<number>;
}

export interface PostingsTable {
  id: Generated<number>;
  order_id: number;
  account_id: number;
  asset_id: string;
  amount: Numeric;
}

export interface PartnerPairsTable {
  partner_id: string;
  pair_id: string;
  available: Generated<boolean>;
  fee_rate: ColumnType<string | null, string | null | undefined, string | null>;
}

export interface QuotesTable {
  id: Generated<number>;
  token_hash: Uint8Array;
  partner_id: string;
  client_id: number;
  pair_id: string;
  side: TradeSide;
  price: Numeric;
  base_amount: Numeric;
  quote_amount: Numeric;
  fee: Numeric;
  vat: Numeric;
  vat_percentage: string | null;
  created_at: Timestamp;
  expires_at: Timestamp;
  spent_at: ColumnType<string | null, string | null | undefined, string | null>;
  order_id: ColumnType<number | null, number | null | undefined, number | null>;
}

/** The formats a document file may have, as decided from its bytes. */
export type DocumentContentType =
  | "image/jpeg"
  | "image/png"
  | "image/heic"
  | "image/heif"
  | "application/pdf";

/** What one key of the file store holds (migration 0003). */
export interface DocumentFilesTable {
  key: string;
  content_type: DocumentContentType;
  size_bytes: number;
  created_at: Timestamp;
}

export interface ClientDocumentsTable {
  id: Generated<number>;
  client_id: number;
  type: DocumentType;
  front_file_key: string;
  back_file_key: string | null;
  created_at: Timestamp;
}

/** One event of a partner (migration 0013): written in the transaction of the change it reports. */
export interface EventsTable {
  seq: Generated<number>;
  /** xid8 as text: the transaction that wrote the event. */
  txid: Generated<string>;
  partner_id: string;
  client_id: number;
  type: string;
  order_id: ColumnType<number | null, number | null | undefined, never>;
  document_id: ColumnType<number | null, number | null | undefined, never>;
  /** The client as the API returned it (client events); JSON text on the way in. */
  data: ColumnType<unknown, string | null | undefined, never>;
  created_at: Timestamp;
}

export type WebhookEndpointStatus = "enabled" | "failing" | "disabled";

/** A partner's webhook endpoint (migration 0014). */
export interface WebhookEndpointsTable {
  id: string;
  partner_id: string;
  url: string;
  event_types: string[];
  status: Generated<WebhookEndpointStatus>;
  /** xid8 as text */
  cursor_txid: string;
  cursor_seq: string;
  created_at: Timestamp;
  updated_at: Timestamp;
}

export type WebhookDeliveryStatus = "pending" | "delivered" | "failed";

export interface WebhookDeliveriesTable {
  id: Generated<number>;
  endpoint_id: string;
  event_id: string;
  event_type: string;
  payload: string;
  status: Generated<WebhookDeliveryStatus>;
  attempts: Generated<number>;
  next_attempt_at: Timestamp;
  last_status_code: ColumnType<number | null, number | null | undefined, number | null>;
  last_error: ColumnType<string | null, string | null | undefined, string | null>;
  created_at: Timestamp;
  delivered_at: ColumnType<string | null, string | null | undefined, string | null>;
}

export interface WebhookAttemptsTable {
  id: Generated<number>;
  delivery_id: number;
  attempted_at: Timestamp;
  status_code: number | null;
  error: string | null;
  duration_ms: number;
}
