// Every bound the service enforces, in one place, so a test can probe each at the limit and one
// past it. Names carry their unit last.

export const limits = {
  /** JSON request bodies larger than this are refused with 413 before they are read in full. */
  jsonBodyBytesMax: 1024 * 1024,
  /** Nesting depth of a JSON body; deeper bodies are a 422 json_invalid. */
  jsonDepthMax: 32,
  /** Multipart bodies (document uploads) as a whole. */
  multipartBodyBytesMax: 11 * 1024 * 1024,
  multipartFilesMax: 2,
  multipartFieldsMax: 10,
  /** One text field of a multipart body (the document `type`); longer values are cut and refused. */
  multipartFieldBytesMax: 1024,
  /** Header lines of one part of a multipart body. */
  multipartPartHeadersMax: 8,
  /** One uploaded document file (spec §8: 5 MB). */
  documentFileBytesMax: 5 * 1024 * 1024,
  /** Request headers as a whole; above it Node answers 431. */
  headerBytesMax: 16 * 1024,
  /** Signature window (spec §5.2). */
  timestampWindowMs: 60_000,
  pageSizeDefault: 10,
  pageSizeMax: 100,
  /** String fields of a client (spec §8). */
  stringLengthMax: 255,
  /** Serialisation failures and deadlocks are retried this many times, then 503. */
  transactionRetriesMax: 3,
  /** Presigned document URLs (spec §2.2). */
  fileUrlLifetimeSeconds: 900,
  /**
   * Largest amount accepted in one deposit or withdrawal, in whole units: far above any real
   * transfer, and far below NUMERIC(38,8)'s 10^30, so sums of many can never overflow a balance.
   */
  amountWholeUnitsMax: 1_000_000_000_000_000n,
  /** Graceful shutdown gives in-flight requests this long before closing. */
  shutdownGraceMs: 10_000,
} as const;
