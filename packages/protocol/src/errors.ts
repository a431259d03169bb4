// The error catalog of the partner interface (docs/reference.md §7): one entry per failure a caller can meet,
// named by a closed string literal. The server maps these names to HTTP, the SDK maps wire codes
// back to names, and docs/errors.md is checked against this table by a test.

export const errorCatalog = {
  bad_request: { code: 400, status: 400, msg: "Bad Request" },
  unauthorized: { code: 401, status: 401, msg: "Unauthorized" },
  forbidden: { code: 403, status: 403, msg: "Forbidden" },
  not_found: { code: 404, status: 404, msg: "Not Found" },
  method_not_allowed: { code: 405, status: 405, msg: "Method Not Allowed" },
  request_timeout: { code: 408, status: 408, msg: "Request Timeout" },
  payload_too_large: { code: 413, status: 413, msg: "Payload Too Large" },
  validation_error: { code: 422, status: 422, msg: "Validation Error" },
  too_many_requests: { code: 429, status: 429, msg: "Too Many Requests" },
  headers_too_large: { code: 431, status: 431, msg: "Request Header Fields Too Large" },
  internal_error: { code: 500, status: 500, msg: "Internal Server Error" },
  service_unavailable: { code: 503, status: 503, msg: "Service Unavailable" },
  invalid_client: { code: 2008, status: 400, msg: "Invalid client ID" },
  client_not_verified: { code: 2009, status: 400, msg: "The client is not yet verified" },
  client_deactivated: { code: 2010, status: 400, msg: "The client is deactivated" },
  invalid_asset: { code: 2012, status: 400, msg: "Invalid asset" },
  invalid_asset_pair: { code: 2013, status: 400, msg: "Invalid asset pair" },
  government_id_taken: {
    code: 2016,
    status: 400,
    msg: "Government ID is already being used by another approved client",
  },
  duplicate_order_ref: {
    code: 2020,
    status: 409,
    msg: "An order with this partner_order_ref already exists",
  },
  client_under_age: { code: 2021, status: 400, msg: "Client is under the legal age" },
  invalid_residency: { code: 2022, status: 400, msg: "Invalid residency country" },
  invalid_citizenship: { code: 2023, status: 400, msg: "Invalid citizenship country" },
  invalid_place_of_birth: { code: 2024, status: 400, msg: "Invalid place of birth country" },
  residency_visa_required: { code: 2025, status: 400, msg: "Residency visa number and expiry are required" },
  duplicate_partner_client_id: {
    code: 2026,
    status: 400,
    msg: "A client with this partner_client_id already exists",
  },
  duplicate_email: { code: 2027, status: 400, msg: "A client with this email already exists" },
  duplicate_phone: { code: 2028, status: 400, msg: "A client with this phone already exists" },
  insufficient_funds: { code: 3005, status: 400, msg: "Insufficient funds" },
  insufficient_funds_for_payment: { code: 3005, status: 400, msg: "Insufficient funds for payment" },
  trading_not_available: { code: 4000, status: 400, msg: "Trading is not available" },
  trading_temporarily_unavailable: { code: 4001, status: 400, msg: "Trading is temporarily unavailable" },
  amount_above_maximum: { code: 4003, status: 400, msg: "Amount exceeds the maximum allowed" },
  amount_below_minimum: { code: 4004, status: 400, msg: "Amount is below the minimum allowed" },
  invalid_trading_token: { code: 4008, status: 400, msg: "Trading token is invalid" },
} as const satisfies Record<string, { code: number; status: number; msg: string }>;

export type ErrorName = keyof typeof errorCatalog;

export const errorNames = Object.keys(errorCatalog) as ErrorName[];

/** One field error of a 422, in the FastAPI/Pydantic shape the contract's examples use. */
export interface FieldError {
  loc: (string | number)[];
  msg: string;
  type: string;
}

/** The body of every error response. */
export interface ErrorBody {
  code: number;
  msg: string;
  msg_detail: unknown;
}

export function errorBody(name: ErrorName, detail: unknown = null): ErrorBody {
  const entry = errorCatalog[name];
  return { code: entry.code, msg: entry.msg, msg_detail: detail };
}
