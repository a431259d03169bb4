// @counterpart/sdk: the typed, signing client of the Counterpart partner interface.

export type { FieldError } from "@counterpart/protocol";
export { type CounterpartOptions, limits as sdkLimits } from "./config.ts";
export { Counterpart } from "./counterpart.ts";
export { optionsFromEnv } from "./environment.ts";
export {
  ApiError,
  AuthenticationError,
  ConflictError,
  CounterpartError,
  errorHint,
  NetworkError,
  NotFoundError,
  OrderRefFailedError,
  RateLimitError,
  type RequestInfo,
  ServerError,
  TimeoutError,
  ValidationError,
} from "./errors.ts";
export { fromMoney, MONEY_ONE, MONEY_SCALE, type Money, toMoney } from "./money.ts";
export type { Clock, FetchPort, HttpRequest, HttpResponse, Random, Sleep } from "./ports.ts";
export type { RequestOptions } from "./request-sender.ts";
export type { Balances } from "./resources/balances.ts";
export type { AssetPairs, Assets, Countries } from "./resources/catalog.ts";
export type { Clients } from "./resources/clients.ts";
export type { Documents } from "./resources/documents.ts";
export {
  type Event,
  type EventFeed,
  type EventListParams,
  type EventPage,
  type Events,
  type EventType,
  type WebhookDelivery,
  type WebhookDeliveryListParams,
  type WebhookEndpoint,
  type WebhookHeaders,
  type WebhookKey,
  Webhooks,
  type WebhookVerification,
} from "./resources/events.ts";
export type { Deposits, Withdrawals } from "./resources/funding.ts";
export type { Orders } from "./resources/orders.ts";
export type { Quotes } from "./resources/quotes.ts";
export { sandboxOptions } from "./sandbox.ts";
export {
  createTestSigner,
  generateTestKeyPair,
  jsonResponse,
  type SignableRequest,
  type SignatureCheck,
  type SignatureHeaders,
  type TestKeyPair,
  type TestSigner,
  type TestSignerOptions,
  verifyTestRequest,
} from "./testing.ts";
export * from "./types.ts";
