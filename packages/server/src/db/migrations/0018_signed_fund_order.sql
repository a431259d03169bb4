-- A deposit or withdrawal and the replay record of the request that asked for it, in one statement
-- and one commit (docs/decisions.md, "A signed write recorded in its order's statement").
--
-- signed_fund_order first checks that the partner's row still holds the credentials the request's
-- signature was accepted by (active, the same active keys newest first, the same allow-list), as
-- readCredentials records a signature (modules/partners/partners-store.ts), and the rate-limit
-- budgets the request was taken from; if not, it raises SQLSTATE CP003 and the caller judges the
-- request again by the row (and keeps the row's budgets for the next request). It then records the
-- signature; one already recorded raises CP004 (a replay). Only then does it post the order with
-- fund_order, in the same transaction: whatever raises, nothing stays written, the record
-- included, and the caller records the signature by a statement of its own before it answers.
CREATE FUNCTION signed_fund_order(
  p_signature bytea,
  p_expires timestamptz,
  p_keys text[],
  p_ips text[],
  p_reads integer,
  p_writes integer,
  p_quotes integer,
  p_partner uuid,
  p_client bigint,
  p_ref text,
  p_type text,
  p_asset text,
  p_amount numeric,
  p_slot smallint,
  p_kinds text[],
  p_clients bigint[],
  p_assets text[],
  p_amounts numeric[]
) RETURNS SETOF orders LANGUAGE plpgsql AS $$
DECLARE
  o orders;
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
    RAISE EXCEPTION 'signed_fund_order: the partner''s credentials changed' USING ERRCODE = 'CP003';
  END IF;
  INSERT INTO used_signatures (partner_id, signature, expires_at)
  VALUES (p_partner, p_signature, p_expires)
  ON CONFLICT DO NOTHING;
  IF NOT FOUND THEN
    RAISE EXCEPTION 'signed_fund_order: the signature was already used' USING ERRCODE = 'CP004';
  END IF;
  -- Into a row variable, not RETURN QUERY: a plan of RETURN QUERY kept by a connection breaks when
  -- orders gains a column (funding.test.ts, "deposits across a schema change").
  SELECT * INTO o FROM fund_order(p_partner, p_client, p_ref, p_type, p_asset, p_amount,
                                  p_slot, p_kinds, p_clients, p_assets, p_amounts);
  RETURN NEXT o;
END;
$$;
