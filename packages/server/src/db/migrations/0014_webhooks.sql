-- Webhooks (docs/reference.md, "Webhooks"): a partner's endpoints, and one delivery per event and
-- endpoint with its attempts.
--
-- An endpoint follows the event feed like any consumer: `cursor_txid, cursor_seq` is the position
-- of the last event turned into deliveries for it (migration 0013 for the order). A worker of any
-- API process takes endpoints with FOR UPDATE SKIP LOCKED, reads the events after the position,
-- writes their deliveries and moves the position in one transaction: each event gets one delivery
-- per endpoint, and the deliveries agree with the feed by construction.
CREATE TABLE webhook_endpoints (
  id uuid PRIMARY KEY,
  partner_id uuid NOT NULL REFERENCES partners (id),
  url text NOT NULL CHECK (length(url) BETWEEN 1 AND 2048),
  -- Empty: every type.
  event_types text[] NOT NULL,
  -- enabled, or failing (a delivery kept failing for the retry period; deliveries go on), or
  -- disabled by the operator (no new deliveries, none attempted).
  status text NOT NULL DEFAULT 'enabled' CHECK (status IN ('enabled', 'failing', 'disabled')),
  cursor_txid xid8 NOT NULL,
  cursor_seq bigint NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now()
);

CREATE INDEX webhook_endpoints_partner ON webhook_endpoints (partner_id, created_at, id);

-- A delivery: the exact body sent (the event as it was rendered when the delivery was made), its
-- state, and when it is next due. A worker claims a due delivery by moving next_attempt_at past
-- the attempt's timeout (a lease): a process killed mid-delivery leaves it due again later, and
-- another worker sends the same body with the same X-Event-ID.
CREATE TABLE webhook_deliveries (
  id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  endpoint_id uuid NOT NULL REFERENCES webhook_endpoints (id) ON DELETE CASCADE,
  event_id text NOT NULL,
  event_type text NOT NULL,
  payload text NOT NULL,
  status text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'delivered', 'failed')),
  attempts integer NOT NULL DEFAULT 0,
  next_attempt_at timestamptz NOT NULL,
  last_status_code integer,
  last_error text,
  created_at timestamptz NOT NULL,
  delivered_at timestamptz
);

CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_attempt_at) WHERE status = 'pending';
CREATE INDEX webhook_deliveries_endpoint ON webhook_deliveries (endpoint_id, id DESC);

CREATE TABLE webhook_attempts (
  id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  delivery_id bigint NOT NULL REFERENCES webhook_deliveries (id) ON DELETE CASCADE,
  attempted_at timestamptz NOT NULL,
  status_code integer,
  error text,
  duration_ms integer NOT NULL
);

CREATE INDEX webhook_attempts_delivery ON webhook_attempts (delivery_id, id);
