// The enumerations of the partner interface (docs/reference.md §2, §3), shared by the server (validation,
// OpenAPI), the SDK (types) and the CLI, so that one list is the truth for all of them.

export const orderTypes = ["deposit", "withdrawal", "buy", "sell"] as const;
export type OrderType = (typeof orderTypes)[number];

export const orderSources = [
  "bank",
  "card",
  "blockchain",
  "referral",
  "bonus",
  "market",
  "limit",
  "fee",
  "entity_change",
  "platform_specific",
] as const;
/** The sources the list filter accepts (docs/reference.md §2.3, §4.5). */
export type OrderSource = (typeof orderSources)[number];

export const orderStatuses = [
  "new",
  "open",
  "pending",
  "processing",
  "completed",
  "expired",
  "queued_cancel",
  "canceled",
  "rejected",
  "failed",
] as const;
export type OrderStatus = (typeof orderStatuses)[number];

/** Statuses after which an order never changes (docs/reference.md §3.3); `completed` is the only success. */
export const finalOrderStatuses = ["completed", "expired", "canceled", "rejected", "failed"] as const;

export const clientStatuses = [
  "verified",
  "unverified",
  "under_review",
  "partially_verified",
  "docs_under_review",
  "not_supported",
  "under_age",
  "rejected",
] as const;
export type ClientStatus = (typeof clientStatuses)[number];

export const employmentStatuses = [
  "employed",
  "self_employed",
  "unemployed",
  "housewife",
  "retired",
] as const;
export type EmploymentStatus = (typeof employmentStatuses)[number];

export const accountPurposes = [
  "short_term_trading",
  "long_term_investment",
  "converting_crypto_to_fiat",
  "cross_border_transactions",
] as const;
export type AccountPurpose = (typeof accountPurposes)[number];

export const documentTypes = [
  "government_id",
  "proof_of_address",
  "residency_visa",
  "source_of_funds",
  "bank_statement",
  "inquiry_report",
] as const;
export type DocumentType = (typeof documentTypes)[number];

/** What an asset is: the catalog's two kinds. */
export const assetTypes = ["crypto", "fiat"] as const;
export type AssetType = (typeof assetTypes)[number];

/** A client's account type; only personal accounts are opened through the partner interface. */
export const accountTypes = ["personal", "corporate"] as const;
export type AccountType = (typeof accountTypes)[number];

/** The side of a quote: buy or sell the pair's base asset. */
export const tradeSides = ["buy", "sell"] as const;
export type TradeSide = (typeof tradeSides)[number];
