// Row types of the database, as the drivers return them: NUMERIC as a string (exact), int8 as a
// number (ids and counts stay far below 2^53), timestamptz as PostgreSQL's UTC text so that
// microseconds survive.

import type { ColumnType, Generated } from "kysely";

/** NUMERIC(38,8) read as text; written from a formatted bigint. */
export type Numeric = ColumnType<string, string, string>;
/** timestamptz read as text in UTC (see db/time.ts); written as ISO text or by default. */
export type Timestamp = ColumnType<string, string | undefined, string>;

export interface PartnersTable {
  id: string;
  name: string;
  public_key_pem: string | null;
  allowed_ips: ColumnType<string[], string[] | undefined, string[]>;
  active: Generated<boolean>;
  fee_rate: ColumnType<string | null, string | null | undefined, string | null>;
  vat_percentage: ColumnType<string | null, string | null | undefined, string | null>;
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
  type: "fiat" | "crypto";
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
  used_signatures: UsedSignaturesTable;
  partner_pairs: PartnerPairsTable;
  clients: ClientsTable;
  document_files: DocumentFilesTable;
  client_documents: ClientDocumentsTable;
  orders: OrdersTable;
  accounts: AccountsTable;
  postings: PostingsTable;
  quotes: QuotesTable;
  schema_migrations: SchemaMigrationsTable;
}

export type ClientStatus =
  | "verified"
  | "unverified"
  | "under_review"
  | "partially_verified"
  | "docs_under_review"
  | "not_supported"
  | "under_age"
  | "rejected";

/** Dates (YYYY-MM-DD) are read as text; see db/database.ts. */
export interface ClientsTable {
  id: Generated<number>;
  partner_id: string;
  partner_client_id: string;
  account_type: "personal" | "corporate";
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
  account_purpose: string[];
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
  status: "employed" | "self_employed" | "unemployed" | "housewife" | "retired";
  company?: string | null;
  job_industry?: string | null;
  job_level?: string | null;
  job_title?: string | null;
}

export type OrderType = "deposit" | "withdrawal" | "buy" | "sell";
export type OrderSource =
  | "bank"
  | "card"
  | "blockchain"
  | "referral"
  | "bonus"
  | "market"
  | "limit"
  | "fee"
  | "entity_change"
  | "platform_specific";
export type OrderStatus =
  | "new"
  | "open"
  | "pending"
  | "processing"
  | "completed"
  | "expired"
  | "queued_cancel"
  | "canceled"
  | "rejected"
  | "failed";

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
  side: "buy" | "sell";
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

export type DocumentType =
  | "government_id"
  | "proof_of_address"
  | "residency_visa"
  | "source_of_funds"
  | "bank_statement"
  | "inquiry_report";

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
