-- House accounts (the partner's omnibus, fee revenue, VAT payable) are split into slots chosen by
-- the client of the order, so concurrent orders of different clients do not all queue on one row
-- lock. A house balance is the sum of its slots; client accounts have one slot, 0.

ALTER TABLE accounts ADD COLUMN slot smallint NOT NULL DEFAULT 0 CHECK (slot BETWEEN 0 AND 63);
ALTER TABLE accounts ADD CONSTRAINT accounts_client_slot CHECK (kind <> 'client' OR slot = 0);
ALTER TABLE accounts DROP CONSTRAINT accounts_owner_key;
ALTER TABLE accounts ADD CONSTRAINT accounts_owner_key UNIQUE NULLS NOT DISTINCT (kind, partner_id, client_id, asset_id, slot);
