-- Clients of partners (spec §2.1, §3.1, §3.2). Uniqueness is per partner and enforced here, so a
-- race between two creates ends in one row and one unique violation, never two rows.

CREATE TABLE clients (
  id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  partner_id uuid NOT NULL REFERENCES partners (id),
  partner_client_id text NOT NULL CHECK (length(partner_client_id) BETWEEN 1 AND 255),
  account_type text NOT NULL CHECK (account_type IN ('personal', 'corporate')),
  name text CHECK (length(name) <= 255),
  birth_date date NOT NULL,
  status text NOT NULL CHECK (
    status IN ('verified', 'unverified', 'under_review', 'partially_verified', 'docs_under_review',
               'not_supported', 'under_age', 'rejected')
  ),
  active boolean NOT NULL DEFAULT true,
  email text NOT NULL CHECK (length(email) <= 320),
  phone text NOT NULL CHECK (phone ~ '^\+[1-9][0-9]{6,14}$'),
  residency_id text NOT NULL REFERENCES countries (id),
  citizenship_id text NOT NULL REFERENCES countries (id),
  place_of_birth_id text NOT NULL REFERENCES countries (id),
  national_number text CHECK (length(national_number) <= 255),
  government_id_number text NOT NULL CHECK (length(government_id_number) BETWEEN 1 AND 255),
  government_id_doe date NOT NULL,
  residency_visa_number text CHECK (length(residency_visa_number) <= 255),
  residency_visa_doe date,
  address jsonb NOT NULL,
  employment jsonb NOT NULL,
  trading_volume text NOT NULL CHECK (length(trading_volume) <= 255),
  account_purpose text[] NOT NULL CHECK (cardinality(account_purpose) >= 1),
  created_at timestamptz NOT NULL DEFAULT now(),
  verified_at timestamptz,
  updated_at timestamptz NOT NULL DEFAULT now(),
  CONSTRAINT clients_partner_client_id_key UNIQUE (partner_id, partner_client_id),
  CONSTRAINT clients_phone_key UNIQUE (partner_id, phone),
  CONSTRAINT clients_government_id_key UNIQUE (partner_id, government_id_number)
);

-- E-mail uniqueness is case-insensitive.
CREATE UNIQUE INDEX clients_email_key ON clients (partner_id, lower(email));
-- Newest-first listing with status and created_at filters.
CREATE INDEX clients_partner_created ON clients (partner_id, created_at DESC, id DESC);
