-- A partner may hold up to three active public keys at once, so that it can rotate its signing
-- key without downtime (docs/operations.md, "Rotating a partner's key"): the operator adds the new
-- key, the partner switches its signer, the operator retires the old key. A request is accepted
-- when it verifies against any active key. Retired keys are kept, with the time they were retired.
--
-- The existing single key of every partner becomes its first key, labelled 'initial', in this same
-- transaction, so there is no moment when a partner's key is in neither place.
--
-- partners.public_key_pem stays: the service keeps it equal to the partner's newest active key (or
-- null), in the same transaction as every key change. A process of the previous version, still
-- running during a rolling deploy, reads only that column; it thus keeps accepting the newest key
-- and refuses a retired one. It can be dropped once no such process can run.

CREATE TABLE partner_keys (
  id uuid PRIMARY KEY,
  partner_id uuid NOT NULL REFERENCES partners (id),
  label text NOT NULL CHECK (length(label) BETWEEN 1 AND 100),
  public_key_pem text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  retired_at timestamptz
);
CREATE INDEX partner_keys_active ON partner_keys (partner_id, created_at) WHERE retired_at IS NULL;

INSERT INTO partner_keys (id, partner_id, label, public_key_pem, created_at)
SELECT gen_random_uuid(), id, 'initial', public_key_pem, updated_at
FROM partners
WHERE public_key_pem IS NOT NULL;
