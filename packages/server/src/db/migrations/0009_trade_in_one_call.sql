-- An executed quote is one statement too (docs/decisions.md, "One call per order"): the order, the
-- spending of the quote and the posting of its legs, as fund_order() does for funding.
--
-- execute_quote inserts the trade's order (source market, status completed) first, so a reused
-- reference fails on the unique index (23505) before the token is touched; then spends the quote
-- behind the token hash, if this partner's client may still spend it at p_now, and links it to the
-- order; a token that cannot be spent raises SQLSTATE CP002, and nothing stays written. Then it
-- posts the legs (given in lock order, see post_legs); when the client's funds no longer cover
-- them, nothing is posted, the order stands as rejected and the quote stays spent.
CREATE FUNCTION execute_quote(
  p_partner uuid,
  p_client bigint,
  p_ref text,
  p_token_hash bytea,
  p_now timestamptz,
  p_side text,
  p_price numeric,
  p_debit numeric,
  p_debit_asset text,
  p_credit numeric,
  p_credit_asset text,
  p_fee numeric,
  p_fee_asset text,
  p_vat numeric,
  p_slot smallint,
  p_kinds text[],
  p_clients bigint[],
  p_assets text[],
  p_amounts numeric[]
) RETURNS SETOF orders LANGUAGE plpgsql AS $$
DECLARE
  o orders;
  spent bigint;
BEGIN
  INSERT INTO orders (partner_id, client_id, partner_order_ref, type, source, status, price,
                      debit, debit_asset_id, credit, credit_asset_id, fee, fee_asset_id, vat)
  VALUES (p_partner, p_client, p_ref, p_side, 'market', 'completed', p_price,
          p_debit, p_debit_asset, p_credit, p_credit_asset, p_fee, p_fee_asset, p_vat)
  RETURNING * INTO o;
  UPDATE quotes SET spent_at = p_now, order_id = o.id
  WHERE token_hash = p_token_hash AND partner_id = p_partner AND client_id = p_client
    AND spent_at IS NULL AND expires_at > p_now
  RETURNING id INTO spent;
  IF spent IS NULL THEN
    RAISE EXCEPTION 'trading token cannot be spent' USING ERRCODE = 'CP002';
  END IF;
  IF NOT post_legs(p_partner, o.id, p_slot, p_kinds, p_clients, p_assets, p_amounts) THEN
    UPDATE orders SET status = 'rejected' WHERE id = o.id RETURNING * INTO o;
  END IF;
  RETURN NEXT o;
END;
$$;
