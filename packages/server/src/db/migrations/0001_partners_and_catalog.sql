-- Partners, their keys and allow-lists; the catalog (countries, assets, pairs with prices);
-- the replay guard of signed requests.

CREATE TABLE partners (
  id uuid PRIMARY KEY,
  name text NOT NULL CHECK (length(name) BETWEEN 1 AND 255),
  public_key_pem text,
  allowed_ips text[] NOT NULL DEFAULT '{}',
  active boolean NOT NULL DEFAULT true,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE countries (
  id text PRIMARY KEY CHECK (id ~ '^[a-z]{2}$'),
  name text NOT NULL,
  supported boolean NOT NULL DEFAULT true
);

CREATE TABLE assets (
  id text PRIMARY KEY CHECK (id ~ '^[A-Z0-9]{2,10}$'),
  type text NOT NULL CHECK (type IN ('fiat', 'crypto')),
  name_en text NOT NULL,
  decimal_places integer NOT NULL CHECK (decimal_places BETWEEN 0 AND 8),
  published boolean NOT NULL DEFAULT false,
  depositable boolean NOT NULL DEFAULT false,
  withdrawable boolean NOT NULL DEFAULT false,
  -- USD value of one unit when no ASSET-USD pair prices it; 1 for USD.
  usd_rate numeric(38, 8) CHECK (usd_rate > 0)
);

CREATE TABLE asset_pairs (
  id text PRIMARY KEY,
  base_id text NOT NULL REFERENCES assets (id),
  quote_id text NOT NULL REFERENCES assets (id),
  buy numeric(38, 8) NOT NULL CHECK (buy > 0),
  sell numeric(38, 8) NOT NULL CHECK (sell > 0),
  tradable boolean NOT NULL DEFAULT true,
  min_volume numeric(38, 8) NOT NULL CHECK (min_volume >= 0),
  max_volume numeric(38, 8) NOT NULL,
  lifetime_s integer NOT NULL DEFAULT 15 CHECK (lifetime_s BETWEEN 1 AND 3600),
  fee_rate numeric(12, 8) NOT NULL DEFAULT 0.005 CHECK (fee_rate >= 0 AND fee_rate < 1),
  price_at timestamptz NOT NULL DEFAULT now(),
  -- true: the operator set the price by hand and the simulated feed leaves the pair alone.
  price_pinned boolean NOT NULL DEFAULT false,
  CHECK (id = base_id || '-' || quote_id),
  CHECK (base_id <> quote_id),
  CHECK (max_volume >= min_volume)
);

CREATE TABLE used_signatures (
  partner_id uuid NOT NULL REFERENCES partners (id),
  signature bytea NOT NULL,
  expires_at timestamptz NOT NULL,
  PRIMARY KEY (partner_id, signature)
);
CREATE INDEX used_signatures_expires_at ON used_signatures (expires_at);

-- Per-partner view of a pair: withheld pairs answer 2013 on quotes and 404 on GET.
CREATE TABLE partner_pairs (
  partner_id uuid NOT NULL REFERENCES partners (id),
  pair_id text NOT NULL REFERENCES asset_pairs (id),
  available boolean NOT NULL DEFAULT true,
  PRIMARY KEY (partner_id, pair_id)
);
