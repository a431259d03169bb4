-- Orders, the double-entry ledger (accounts and postings) and the invariants the database itself
-- guarantees: no negative client balance, no amount <= 0, no NaN, one order per partner reference,
-- and every order's postings summing to zero per asset.

CREATE TABLE orders (
  id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  partner_id uuid NOT NULL REFERENCES partners (id),
  client_id bigint NOT NULL REFERENCES clients (id),
  partner_order_ref text CHECK (length(partner_order_ref) BETWEEN 1 AND 255),
  type text NOT NULL CHECK (type IN ('deposit', 'withdrawal', 'buy', 'sell')),
  source text NOT NULL CHECK (
    source IN ('bank', 'card', 'blockchain', 'referral', 'bonus', 'market', 'limit', 'fee',
               'entity_change', 'platform_specific')
  ),
  status text NOT NULL CHECK (
    status IN ('new', 'open', 'pending', 'processing', 'completed', 'expired', 'queued_cancel',
               'canceled', 'rejected', 'failed')
  ),
  price numeric(38, 8) CHECK (price > 0 AND price <> 'NaN'),
  credit numeric(38, 8) CHECK (credit > 0 AND credit <> 'NaN'),
  credit_asset_id text REFERENCES assets (id),
  debit numeric(38, 8) CHECK (debit > 0 AND debit <> 'NaN'),
  debit_asset_id text REFERENCES assets (id),
  fee numeric(38, 8) NOT NULL DEFAULT 0 CHECK (fee >= 0 AND fee <> 'NaN'),
  fee_asset_id text NOT NULL REFERENCES assets (id),
  vat numeric(38, 8) NOT NULL DEFAULT 0 CHECK (vat >= 0 AND vat <> 'NaN'),
  created_at timestamptz NOT NULL DEFAULT now(),
  transitioned_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now(),
  CONSTRAINT orders_partner_order_ref_key UNIQUE (partner_id, partner_order_ref),
  CHECK ((credit IS NULL) = (credit_asset_id IS NULL)),
  CHECK ((debit IS NULL) = (debit_asset_id IS NULL))
);

-- The list endpoint pages newest first, filtered by partner and optionally client, source, status
-- and a created_at range: these two indexes serve it without a sort (see docs/operations.md).
CREATE INDEX orders_partner_created ON orders (partner_id, created_at DESC, id DESC);
CREATE INDEX orders_partner_client_created ON orders (partner_id, client_id, created_at DESC, id DESC);

-- One account per owner and asset. Client accounts belong to a client; house accounts (the
-- partner's omnibus, fee revenue, VAT payable) have no client.
CREATE TABLE accounts (
  id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  kind text NOT NULL CHECK (kind IN ('client', 'omnibus', 'fee_revenue', 'vat_payable')),
  partner_id uuid NOT NULL REFERENCES partners (id),
  client_id bigint REFERENCES clients (id),
  asset_id text NOT NULL REFERENCES assets (id),
  balance numeric(38, 8) NOT NULL DEFAULT 0 CHECK (balance <> 'NaN'),
  held numeric(38, 8) NOT NULL DEFAULT 0 CHECK (held >= 0 AND held <> 'NaN'),
  CONSTRAINT accounts_owner_key UNIQUE NULLS NOT DISTINCT (kind, partner_id, client_id, asset_id),
  CHECK ((kind = 'client') = (client_id IS NOT NULL)),
  -- A client never owes: balance and available balance stay at or above zero.
  CONSTRAINT accounts_client_not_negative CHECK (kind <> 'client' OR (balance >= 0 AND balance - held >= 0))
);

CREATE TABLE postings (
  id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  order_id bigint NOT NULL REFERENCES orders (id),
  account_id bigint NOT NULL REFERENCES accounts (id),
  asset_id text NOT NULL REFERENCES assets (id),
  amount numeric(38, 8) NOT NULL CHECK (amount <> 0 AND amount <> 'NaN')
);
CREATE INDEX postings_order ON postings (order_id);
CREATE INDEX postings_account ON postings (account_id);

-- Checked at commit: an order's postings balance per asset.
CREATE FUNCTION postings_balance_per_order() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  unbalanced text;
BEGIN
  SELECT asset_id INTO unbalanced FROM postings
  WHERE order_id = NEW.order_id GROUP BY asset_id HAVING sum(amount) <> 0 LIMIT 1;
  IF unbalanced IS NOT NULL THEN
    RAISE EXCEPTION 'postings of order % do not balance in %', NEW.order_id, unbalanced
      USING ERRCODE = 'check_violation';
  END IF;
  RETURN NULL;
END;
$$;

CREATE CONSTRAINT TRIGGER postings_balanced
  AFTER INSERT ON postings DEFERRABLE INITIALLY DEFERRED
  FOR EACH ROW EXECUTE FUNCTION postings_balance_per_order();
