// Every bound the service enforces, in one place, so a test can probe each at the limit and one
// past it. Names carry their unit last.

export const limits = {
  /** JSON request bodies larger than this are refused with 413 before they are read in full. */
  jsonBodyBytesMax: 1024 * 1024,
  /** Nesting depth of a JSON body; deeper bodies are a 422 json_invalid. */
  jsonDepthMax: 32,
  /** Multipart bodies (document uploads) as a whole. */
  multipartBodyBytesMax: 11 * 1024 * 1024,
  /**
   * A body refused as too large is still read, and thrown away, up to this many more bytes or
   * `bodyLingerMs`, whichever comes first, before the 413 is sent: closing a connection the
   * client is still writing to resets it, and the reset can destroy the 413 before the client
   * reads it (the "lingering close" of nginx and Apache). Past either bound the 413 goes at once.
   */
  bodyLingerBytesMax: 16 * 1024 * 1024,
  bodyLingerMs: 2_000,
  /**
   * Request body bytes a process holds at once, by default (BODY_BYTES_IN_FLIGHT_MAX): bodies
   * being read, and read ones until their answer is sent. Past it a body is a 503. Room for eleven
   * uploads of the largest size at once; an upload costs about twice its body while it is
   * checked and stored. At least one upload of the largest size (BodyBudget, http/body-parsing.ts).
   */
  bodyBytesInFlightMax: 128 * 1024 * 1024,
  multipartFilesMax: 2,
  multipartFieldsMax: 10,
  /** One text field of a multipart body (the document `type`); longer values are cut and refused. */
  multipartFieldBytesMax: 1024,
  /** Header lines of one part of a multipart body. */
  multipartPartHeadersMax: 8,
  /** Parsing a multipart body already in memory; past it the body counts as unreadable. */
  multipartParseMsMax: 10_000,
  /** One uploaded document file (docs/reference.md §8: 5 MB). */
  documentFileBytesMax: 5 * 1024 * 1024,
  /** Request headers as a whole; above it Node answers 431. */
  headerBytesMax: 16 * 1024,
  /**
   * Time to receive a request's headers, from its first byte (or, on a new connection, from the
   * connection's opening): a silent or trickling client is answered 408 and its socket closed.
   */
  requestHeadersTimeoutMs: 10_000,
  /**
   * Time to receive a whole request, headers and body: a body trickled slower than that is
   * answered 408 and its socket closed. 15 s carries the largest upload (11 MiB) at 6 Mbit/s.
   */
  requestReceiveTimeoutMs: 15_000,
  /**
   * How often Node looks for requests past the two bounds above (its default is 30 s): a slow
   * request is cut at most this much after its bound.
   */
  requestTimeoutCheckIntervalMs: 1_000,
  /**
   * An idle keep-alive connection is closed after this long. Above the 60 s idle timeout of
   * common load balancers, so that the balancer, not the service, closes idle connections.
   */
  keepAliveIdleMs: 72_000,
  /**
   * Connections open at once per client address (CONNECTIONS_PER_ADDRESS_MAX) and per listener
   * (CONNECTIONS_MAX), by default (http/connection-caps.ts). Keep the second well under the
   * process's open-file limit (ulimit -n), which also holds its database connections and files.
   */
  connectionsPerAddressMax: 1_000,
  connectionsMax: 10_000,
  /**
   * Clients whose funding facts (status, active) a process keeps, to judge their next deposit or
   * withdrawal without a statement of its own (docs/decisions.md, "Funding facts witnessed in the
   * order's statement"); past this many the oldest kept goes. Assets are kept under the same bound.
   */
  fundingFactsKeptMax: 10_000,
  /**
   * Quotes a process keeps after making them (their token's hash, terms and client's facts), to
   * execute them without a statement of their own (docs/decisions.md, "An execute by the quote its
   * process kept"); past this many the oldest kept goes, and its execute reads the quote instead.
   */
  quotesKeptMax: 10_000,
  /**
   * Clients and pairs whose quote facts a process keeps, to price and judge their next quote without
   * a statement of its own (docs/decisions.md, "A quote by the facts its process kept"); past this
   * many of either the oldest kept goes.
   */
  quoteFactsKeptMax: 10_000,
  /**
   * Orders committed together (modules/ledger/order-queue.ts): the deposits and withdrawals, and
   * the executes, that arrive while a process's call of their use is in the database go together
   * in its next call, at most this many (one per house slot and partner) ...
   */
  ordersBatchMax: 16,
  /** ... while at most this many wait (past it, an order goes alone, on a connection of its own) ... */
  ordersWaitingMax: 1_000,
  /** ... and at most this many of the process's calls of one use are in the database at once. */
  ordersCallsInFlightMax: 1,
  /**
   * An order waits this long at most for a call; then it goes alone, as it would without the
   * queue, so that a slow or hung database holds it no longer than its own statement's bound.
   */
  ordersWaitMs: 250,
  /** Signature window (docs/reference.md §5.2). */
  timestampWindowMs: 60_000,
  pageSizeDefault: 10,
  pageSizeMax: 100,
  /** String fields of a client (docs/reference.md §8). */
  stringLengthMax: 255,
  /** Serialisation failures and deadlocks are retried this many times, then 503. */
  transactionRetriesMax: 3,
  /** Webhooks (docs/reference.md, "Webhooks"): a 2xx within this bound is a delivery. */
  webhookTimeoutMs: 10_000,
  /** A delivery is retried for this long after it was made, then it has failed. */
  webhookRetryPeriodMs: 72 * 3_600_000,
  /** Exponential backoff between attempts: the first wait, and the longest (before jitter). */
  webhookBackoffFirstMs: 10_000,
  webhookBackoffMaxMs: 3_600_000,
  /** A claimed delivery is not due again for this long (timeout and margin): a dead worker's comes back. */
  webhookLeaseMs: 30_000,
  /** At most this much of an endpoint's answer is read. */
  webhookResponseBytesMax: 4_096,
  webhookEndpointsPerPartnerMax: 16,
  /** Deliveries in flight per API process, and per endpoint per process. */
  webhookConcurrency: 16,
  webhookEndpointConcurrency: 2,
  /** How often an idle worker looks for events to dispatch and deliveries due. */
  webhookPollMs: 500,
  /** Presigned document URLs (docs/reference.md §2.2). */
  fileUrlLifetimeSeconds: 900,
  /** S3 file store: opening a connection to the endpoint gives up after this long. */
  fileStoreConnectMs: 3_000,
  /** S3 file store: one attempt (request sent, answer received) gives up after this long. */
  fileStoreAttemptMs: 5_000,
  /** S3 file store: attempts of one call (the SDK's retries, with backoff, on throttling and 5xx). */
  fileStoreAttemptsMax: 3,
  /**
   * S3 file store: one whole call (every attempt, and reading the object) is abandoned after this
   * long, whatever the SDK is doing; the request is then a 503.
   */
  fileStoreCallMs: 10_000,
  /**
   * Largest amount accepted in one deposit or withdrawal, in whole units: far above any real
   * transfer, and far below NUMERIC(38,8)'s 10^30, so sums of many can never overflow a balance.
   */
  amountWholeUnitsMax: 1_000_000_000_000_000n,
  /** With WORKERS=N, the start fails when N API workers are not listening within this bound. */
  workerStartMs: 120_000,
  /**
   * V8's semi-space, in MiB, for each API worker of WORKERS=N (its young generation is made of
   * them). Left to itself, V8 sizes it from the heap limit, 64 MiB on a large machine, and a worker
   * under a mixed load peaked at 380 MiB; at 16 MiB, 270-320 MiB for 12 µs more of garbage
   * collection per request; smaller costs more (docs/decisions.md, "A smaller young generation per
   * API worker"). An operator's own --max-semi-space-size (NODE_OPTIONS) is kept.
   */
  workerSemiSpaceMib: 16,
  /**
   * V8's old generation grows, before its next full collection, to this per cent above what the
   * last one kept alive, for each API worker of WORKERS=N (V8's --heap-growing-percent). Left to
   * itself, V8 picks the factor from how fast it collects, up to four times on a large machine,
   * and a worker's old generation rose from some 40 MiB alive to 97 before each full collection;
   * at 100 %, to 46, the worker's peak fell from 250 to 188 MiB with no more garbage collection
   * per request (docs/decisions.md, "A smaller young generation per API worker"). An operator's
   * own --heap-growing-percent is kept.
   */
  workerHeapGrowingPercent: 100,
  /** Graceful shutdown gives in-flight requests this long before closing. */
  shutdownGraceMs: 10_000,
  /**
   * PostgreSQL: opening a connection, and waiting for a free one in the pool, each give up after
   * this long (pg-pool's connectionTimeoutMillis bounds both). A database that refuses, hangs or
   * sits behind a network black hole answers 503 in this time instead of holding the request.
   */
  databaseConnectMs: 3_000,
  /** PostgreSQL cancels a statement that runs longer (statement_timeout; SQLSTATE 57014, a 503). */
  databaseStatementMs: 4_000,
  /**
   * The client gives up waiting for a statement's answer after this long and drops the
   * connection: the bound when the server itself cannot answer (stopped, unreachable). Longer
   * than `databaseStatementMs`, so a slow statement is cancelled by the server first and its
   * connection kept.
   */
  databaseReadMs: 5_000,
  /** PostgreSQL ends a session left idle inside a transaction for longer (its locks go with it). */
  databaseIdleInTransactionMs: 15_000,
  /** Bound on each statement of a migration (run at start, before serving; may rewrite tables). */
  databaseMigrationStatementMs: 10 * 60_000,
  /**
   * Bound on the operator's ledger check as a whole (its three statements, in one snapshot), which
   * reads every posting: 3.6 s at 1,000,000 orders and 8.4 s at 3,000,000 on a 2-core machine,
   * past a request's 4 s statement bound. One check at a time per process: a request that comes
   * while one runs gets that one's answer.
   */
  ledgerCheckMs: 5 * 60_000,
  /** An operator's console session ends after this long without a request (idle timeout). */
  operatorSessionIdleMs: 30 * 60_000,
  /** ... and after this long in any case: the operator signs in again every working day. */
  operatorSessionLifetimeMs: 12 * 60 * 60_000,
  /** A session's last-seen time is written at most this often (not on every request). */
  operatorSessionTouchMs: 60_000,
  /** A one-time sign-in link is good for this long, once. */
  operatorSignInLinkMs: 15 * 60_000,
  /** Refused sign-ins are counted over this window... */
  operatorSignInWindowMs: 15 * 60_000,
  /** ... and past this many for one e-mail address, its sign-ins are refused (429) until they age out. */
  operatorSignInFailuresPerEmailMax: 5,
  /** ... or past this many from one IP address, whatever the addresses tried. */
  operatorSignInFailuresPerIpMax: 20,
  /**
   * Rate limits per partner (docs/decisions.md, "Rate limits"): requests per window, one budget per
   * class of request, unless the operator set the partner's own (`counterpart partner limits`).
   * A budget of N lets N requests through at once and refills continuously at N per window (GCRA).
   */
  rateLimitWindowMs: 60_000,
  rateLimitReadsDefault: 6_000,
  rateLimitWritesDefault: 3_000,
  rateLimitQuotesDefault: 1_200,
  /** The largest budget the operator may set for one class (requests per window). */
  rateLimitPerWindowMax: 10_000_000,
  /** Redis (REDIS_URL): opening a connection gives up after this long, then retries. */
  redisConnectMs: 1_000,
  /** Redis: one command's answer is waited for this long; past it the call counts as failed. */
  redisCommandMs: 250,
  /** Redis: after a failed call, the shared state is not asked again for this long. */
  redisRetryAfterFailureMs: 1_000,
  /** Redis: the longest pause between two reconnection attempts. */
  redisReconnectMaxMs: 2_000,
} as const;
