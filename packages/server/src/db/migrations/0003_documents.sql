-- KYC documents of clients (spec §2.2, §4.7). The bytes live in the file store under random keys;
-- the database keeps what each key holds (its format, decided from its content) and which
-- document it belongs to. File names sent by partners are never stored.

CREATE TABLE document_files (
  key text PRIMARY KEY CHECK (key ~ '^[A-Za-z0-9_-]{43}$'),
  content_type text NOT NULL CHECK (
    content_type IN ('image/jpeg', 'image/png', 'image/heic', 'image/heif', 'application/pdf')
  ),
  -- spec §8: 5 MB per file, read as 5 MiB.
  size_bytes integer NOT NULL CHECK (size_bytes BETWEEN 1 AND 5242880),
  created_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE client_documents (
  id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  client_id bigint NOT NULL REFERENCES clients (id),
  type text NOT NULL CHECK (
    type IN ('government_id', 'proof_of_address', 'residency_visa', 'source_of_funds', 'bank_statement',
             'inquiry_report')
  ),
  front_file_key text NOT NULL UNIQUE REFERENCES document_files (key),
  back_file_key text UNIQUE REFERENCES document_files (key),
  created_at timestamptz NOT NULL DEFAULT now(),
  CHECK (back_file_key IS NULL OR back_file_key <> front_file_key)
);

-- Newest-first listing of one client's documents, with the type filter.
CREATE INDEX client_documents_client_created ON client_documents (client_id, created_at DESC, id DESC);
