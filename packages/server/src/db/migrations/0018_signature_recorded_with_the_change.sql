-- A request's replay record in the statement that makes its change, in one commit with it
-- (docs/decisions.md, "A signed write recorded in its change's statement").
--
-- record_signature first checks that the partner's row still holds the credentials the request's
-- signature was accepted by (active, the same active keys newest first, the same allow-list), as
-- readCredentials records a signature (modules/partners/partners-store.ts), and the rate-limit
-- budgets the request was taken from; if not, it raises SQLSTATE CP003 and the caller judges the
-- request again by the row (and keeps the row's budgets for the next request). It then records the
-- signature; one already recorded raises CP004 (a replay). It returns the partner's id, so that the
-- change's function takes it as its partner argument: PostgreSQL evaluates an argument before it
-- calls the function, so the record is made, or the statement fails, before anything else is
-- written. Whatever raises later in the statement, nothing stays written, the record included, and
-- the caller records the signature by a statement of its own before it answers.
CREATE FUNCTION record_signature(
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
      AND ARRAY(
        SELECT k.public_key_pem FROM partner_keys k
        WHERE k.partner_id = p.id AND k.retired_at IS NULL
        ORDER BY k.created_at DESC, k.id DESC
      ) = p_keys
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
