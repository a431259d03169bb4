-- Trading: fees and VAT per partner, and quotes whose tokens are kept only as hashes.

-- Fee rate resolution: the partner's rate for the pair, else the partner's own default, else the
-- pair's catalog default (asset_pairs.fee_rate).
ALTER TABLE partner_pairs ADD COLUMN fee_rate numeric(12, 8) CHECK (fee_rate >= 0 AND fee_rate < 1);
ALTER TABLE partners ADD COLUMN fee_rate numeric(12, 8) CHECK (fee_rate >= 0 AND fee_rate < 1);
-- VAT charged on fees, as a percentage; null: no VAT.
ALTER TABLE partners ADD COLUMN vat_percentage numeric(7, 4) CHECK (vat_percentage >= 0 AND vat_percentage <= 100);

CREATE TABLE quotes (
  id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  -- SHA-256 of the token; the token itself is never stored.
  token_hash bytea NOT NULL UNIQUE,
  partner_id uuid NOT NULL REFERENCES partners (id),
  client_id bigint NOT NULL REFERENCES clients (id),
  pair_id text NOT NULL REFERENCES asset_pairs (id),
  side text NOT NULL CHECK (side IN ('buy', 'sell')),
  price numeric(38, 8) NOT NULL CHECK (price > 0 AND price <> 'NaN'),
  base_amount numeric(38, 8) NOT NULL CHECK (base_amount > 0 AND base_amount <> 'NaN'),
  quote_amount numeric(38, 8) NOT NULL CHECK (quote_amount > 0 AND quote_amount <> 'NaN'),
  fee numeric(38, 8) NOT NULL CHECK (fee >= 0 AND fee <> 'NaN'),
  vat numeric(38, 8) NOT NULL CHECK (vat >= 0 AND vat <> 'NaN'),
  vat_percentage numeric(7, 4),
  created_at timestamptz NOT NULL,
  expires_at timestamptz NOT NULL,
  -- Set once, by the execution that created an order (completed or rejected).
  spent_at timestamptz,
  order_id bigint REFERENCES orders (id)
);
CREATE INDEX quotes_expires_at ON quotes (expires_at) WHERE spent_at IS NULL;
