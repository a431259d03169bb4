-- A partner's credentials kept on its own row, by the database (docs/decisions.md, "A partner's
-- credentials kept on its row"). Every signed request reads them (modules/partners/partners-store.ts):
-- a read in its own statement (the credentials' JSON text, credentialsColumn), a write in
-- record_signature(). Each built them from the partner's row and a sorted subquery over its active
-- keys, and a read turned them into JSON: some 40 µs of the database's time per request, the same at
-- every request, for a row that changes a few times a year.
--
-- partners.active_keys: the partner's active keys (partner_keys, retired_at null), newest first
-- (created_at, then id, descending). partners.credentials: the JSON text a read carries, as
-- to_jsonb() of (id, allowed_ips, active, rate_limit_reads, rate_limit_writes, rate_limit_quotes,
-- public_keys) gave it, byte for byte.
--
-- Both are set by partners_credentials_kept(), before every insert and update of a partner's row,
-- from the row as it is being written and from partner_keys as a query of the trigger sees it then.
-- Every insert, update or delete of a key updates its partner's row (partner_keys_kept()), which
-- runs it. That update waits for the row's lock, so a key change made at the same time by another
-- transaction has committed, or not yet changed the row, when the keys are read: under READ
-- COMMITTED each query of a trigger function takes a snapshot of its own, taken after the lock,
-- so the last change to commit computes them from every change before it. A key table emptied at
-- once (TRUNCATE) would bypass the row triggers: it is refused.

ALTER TABLE partners ADD COLUMN active_keys text[] NOT NULL DEFAULT '{}';
ALTER TABLE partners ADD COLUMN credentials text;

CREATE FUNCTION partners_credentials_kept() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  NEW.active_keys := ARRAY(
    SELECT k.public_key_pem FROM partner_keys k
    WHERE k.partner_id = NEW.id AND k.retired_at IS NULL
    ORDER BY k.created_at DESC, k.id DESC
  );
  NEW.credentials := jsonb_build_object(
    'id', NEW.id,
    'allowed_ips', NEW.allowed_ips,
    'active', NEW.active,
    'rate_limit_reads', NEW.rate_limit_reads,
    'rate_limit_writes', NEW.rate_limit_writes,
    'rate_limit_quotes', NEW.rate_limit_quotes,
    'public_keys', NEW.active_keys
  )::text;
  RETURN NEW;
END;
$$;

CREATE TRIGGER partners_credentials_kept BEFORE INSERT OR UPDATE ON partners
  FOR EACH ROW EXECUTE FUNCTION partners_credentials_kept();

CREATE FUNCTION partner_keys_kept() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP <> 'INSERT' THEN
    UPDATE partners SET active_keys = '{}' WHERE id = OLD.partner_id;
  END IF;
  IF TG_OP <> 'DELETE' AND (TG_OP = 'INSERT' OR NEW.partner_id IS DISTINCT FROM OLD.partner_id) THEN
    UPDATE partners SET active_keys = '{}' WHERE id = NEW.partner_id;
  END IF;
  RETURN NULL;
END;
$$;

CREATE TRIGGER partner_keys_kept AFTER INSERT OR UPDATE OR DELETE ON partner_keys
  FOR EACH ROW EXECUTE FUNCTION partner_keys_kept();

CREATE FUNCTION partner_keys_never_truncated() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'partner_keys cannot be truncated: each partner''s row keeps its active keys';
END;
$$;

CREATE TRIGGER partner_keys_never_truncated BEFORE TRUNCATE ON partner_keys
  FOR EACH STATEMENT EXECUTE FUNCTION partner_keys_never_truncated();

-- Every partner's row, as it is now (this migration's ALTER holds partners' lock to the commit).
UPDATE partners SET active_keys = '{}';
ALTER TABLE partners ALTER COLUMN credentials SET NOT NULL;

-- record_signature() as migration 0018 made it, the active keys read from the partner's row.
CREATE OR REPLACE FUNCTION record_signature(
  p_partner uuid,
  p_signature bytea,
  p_expires timestamptz,
  p_keys text[],
  p_ips text[],
  p_reads integer,
  p_writes integer,
  p_quotes integer
) RETURNS uuid LANGUAGE plpgsql AS $$
BEGIN
  IF NOT EXISTS (
    SELECT 1 FROM partners p
    WHERE p.id = p_partner AND p.active AND p.allowed_ips = p_ips
      AND p.rate_limit_reads IS NOT DISTINCT FROM p_reads
      AND p.rate_limit_writes IS NOT DISTINCT FROM p_writes
      AND p.rate_limit_quotes IS NOT DISTINCT FROM p_quotes
      AND p.active_keys = p_keys
  ) THEN
    RAISE EXCEPTION 'record_signature: the partner''s credentials changed' USING ERRCODE = 'CP003';
  END IF;
  INSERT INTO used_signatures (partner_id, signature, expires_at)
  VALUES (p_partner, p_signature, p_expires)
  ON CONFLICT DO NOTHING;
  IF NOT FOUND THEN
    RAISE EXCEPTION 'record_signature: the signature was already used' USING ERRCODE = 'CP004';
  END IF;
  RETURN p_partner;
END;
$$;
