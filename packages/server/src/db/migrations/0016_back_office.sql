-- The operator's back office: named operator accounts with a role, their sessions, one-time
-- sign-in links (the sandbox), and the failed sign-ins that throttle password guessing
-- (docs/decisions.md, "Operator accounts"), and the audit trail of what operators do
-- (docs/decisions.md, "Audit trail").
--
-- Secrets are stored as digests only: a session's token and a link's token as hex SHA-256 (they are
-- 256 random bits each), a password as scrypt text ("scrypt$N$r$p$salt$hash", modules/operators/
-- password.ts). A stolen copy of these tables signs no one in.

CREATE TABLE operators (
  id uuid PRIMARY KEY,
  -- Kept lower-case by the service; one account per address.
  email text NOT NULL UNIQUE CHECK (email = lower(email) AND length(email) BETWEEN 3 AND 254),
  role text NOT NULL CHECK (role IN ('viewer', 'compliance', 'admin')),
  -- null: the account signs in by a one-time link only.
  password_hash text,
  active boolean NOT NULL DEFAULT true,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now(),
  last_sign_in_at timestamptz
);

CREATE TABLE operator_sessions (
  token_sha256 text PRIMARY KEY,
  operator_id uuid NOT NULL REFERENCES operators (id),
  -- The token a state-changing request must echo in X-CSRF-Token (docs/decisions.md).
  csrf_token text NOT NULL,
  created_at timestamptz NOT NULL,
  last_seen_at timestamptz NOT NULL
);
CREATE INDEX operator_sessions_operator ON operator_sessions (operator_id);

CREATE TABLE operator_sign_in_links (
  token_sha256 text PRIMARY KEY,
  operator_id uuid NOT NULL REFERENCES operators (id),
  created_at timestamptz NOT NULL,
  expires_at timestamptz NOT NULL,
  used_at timestamptz
);

-- One row per refused sign-in, by key ("email:<address>" and "ip:<address>"); only the recent ones
-- count and older ones are deleted as new ones arrive.
CREATE TABLE operator_sign_in_failures (
  id bigserial PRIMARY KEY,
  key text NOT NULL,
  at timestamptz NOT NULL
);
CREATE INDEX operator_sign_in_failures_key ON operator_sign_in_failures (key, at);

-- The audit trail: one row per state-changing operator action (admin API, CLI, console), written in
-- the transaction of the change itself, so a change is never without its row nor a row without its
-- change. Who (an operator, the bearer token, or the service itself at start), when, what, on which
-- record, the record's values before and after, and the reason given.
CREATE TABLE audit_log (
  id bigserial PRIMARY KEY,
  at timestamptz NOT NULL,
  actor_kind text NOT NULL CHECK (actor_kind IN ('operator', 'token', 'system')),
  actor_id uuid REFERENCES operators (id),
  actor_email text,
  action text NOT NULL CHECK (length(action) BETWEEN 1 AND 64),
  target_type text NOT NULL CHECK (length(target_type) BETWEEN 1 AND 32),
  target_id text NOT NULL CHECK (length(target_id) BETWEEN 1 AND 300),
  before jsonb,
  after jsonb,
  reason text CHECK (reason IS NULL OR length(reason) BETWEEN 1 AND 1000),
  CHECK ((actor_kind = 'operator') = (actor_id IS NOT NULL))
);
CREATE INDEX audit_log_at ON audit_log (at DESC, id DESC);
CREATE INDEX audit_log_target ON audit_log (target_type, target_id, at DESC, id DESC);
CREATE INDEX audit_log_actor ON audit_log (actor_id, at DESC, id DESC);
CREATE INDEX audit_log_action ON audit_log (action, at DESC, id DESC);

-- Append-only: the database itself refuses to change or remove a row, whatever the caller.
CREATE FUNCTION audit_log_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'the audit log is append-only' USING ERRCODE = 'check_violation';
END;
$$;

CREATE TRIGGER audit_log_append_only
  BEFORE UPDATE OR DELETE ON audit_log
  FOR EACH STATEMENT EXECUTE FUNCTION audit_log_append_only();

CREATE TRIGGER audit_log_no_truncate
  BEFORE TRUNCATE ON audit_log
  FOR EACH STATEMENT EXECUTE FUNCTION audit_log_append_only();

-- The console looks clients up across partners by any of these; each is an exact match.
CREATE INDEX clients_lookup_partner_client_id ON clients (partner_client_id);
CREATE INDEX clients_lookup_email ON clients (lower(email));
CREATE INDEX clients_lookup_phone ON clients (phone);
CREATE INDEX clients_lookup_government_id ON clients (government_id_number);
CREATE INDEX clients_status_created ON clients (status, created_at DESC, id DESC);
