-- An execute judged by what the process that made the quote kept, witnessed in the order's own
-- statement (docs/decisions.md, "An execute by the quote its process kept").
--
-- 1. client_standing_held(): an execute is judged on its client (status, active) and on the quote
--    behind its token. The process that made a quote keeps its terms and the client's facts the
--    quote was judged on; an execute of that token, for that partner's client, is then judged by
--    them without a statement of its own, and execute_quote() takes as its client argument
--    client_standing_held(...), which first checks that the client's row still holds exactly what
--    was kept. If not, it raises SQLSTATE CP006 and the caller reads the rows and judges the
--    request again; nothing is written, as the argument is evaluated before execute_quote() runs.
--    Whether the quote can still be spent is execute_quote()'s own check (CP002), as before.
-- 2. execute_quote() took the trade's terms from its caller, which had just read them from the
--    quote's row. Kept terms come from the process's memory instead, so the function now checks
--    them where it spends the quote: the side, the price, the amounts and their assets, the fee and
--    the VAT given must be the quote's, or it raises check_violation (a fault of the caller, never
--    a partner's answer) and nothing is written. Its signature and its answers are unchanged.
CREATE FUNCTION client_standing_held(
  p_partner uuid,
  p_client bigint,
  p_partner_client_id text,
  p_status text,
  p_active boolean
) RETURNS bigint LANGUAGE plpgsql AS $$
BEGIN
  IF NOT EXISTS (
    SELECT 1 FROM clients c
    WHERE c.id = p_client AND c.partner_id = p_partner AND c.partner_client_id = p_partner_client_id
      AND c.status = p_status AND c.active = p_active
  ) THEN
    RAISE EXCEPTION 'client_standing_held: the client changed' USING ERRCODE = 'CP006';
  END IF;
  RETURN p_client;
END;
$$;

CREATE OR REPLACE FUNCTION execute_quote(
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
  t_side text;
  t_price numeric;
  t_base numeric;
  t_quote numeric;
  t_fee numeric;
  t_vat numeric;
  t_base_asset text;
  t_quote_asset text;
BEGIN
  INSERT INTO orders (partner_id, client_id, partner_order_ref, type, source, status, price,
                      debit, debit_asset_id, credit, credit_asset_id, fee, fee_asset_id, vat)
  VALUES (p_partner, p_client, p_ref, p_side, 'market', 'completed', p_price,
          p_debit, p_debit_asset, p_credit, p_credit_asset, p_fee, p_fee_asset, p_vat)
  RETURNING * INTO o;
  UPDATE quotes q SET spent_at = p_now, order_id = o.id
  FROM asset_pairs p
  WHERE q.token_hash = p_token_hash AND q.partner_id = p_partner AND q.client_id = p_client
    AND q.spent_at IS NULL AND q.expires_at > p_now AND p.id = q.pair_id
  RETURNING q.id, q.side, q.price, q.base_amount, q.quote_amount, q.fee, q.vat, p.base_id, p.quote_id
    INTO spent, t_side, t_price, t_base, t_quote, t_fee, t_vat, t_base_asset, t_quote_asset;
  IF spent IS NULL THEN
    RAISE EXCEPTION 'trading token cannot be spent' USING ERRCODE = 'CP002';
  END IF;
  -- The order's columns as the service writes them (trading-store.ts, executeQuote()): a buy's
  -- debit is the base amount, its credit the quote amount; a sell's the other way round; the fee
  -- and the VAT are in the quote asset.
  IF p_side IS DISTINCT FROM t_side OR p_price IS DISTINCT FROM t_price
     OR p_fee IS DISTINCT FROM t_fee OR p_vat IS DISTINCT FROM t_vat
     OR p_fee_asset IS DISTINCT FROM t_quote_asset
     OR (t_side = 'buy' AND (p_debit, p_debit_asset, p_credit, p_credit_asset)
                             IS DISTINCT FROM (t_base, t_base_asset, t_quote, t_quote_asset))
     OR (t_side = 'sell' AND (p_debit, p_debit_asset, p_credit, p_credit_asset)
                              IS DISTINCT FROM (t_quote, t_quote_asset, t_base, t_base_asset)) THEN
    RAISE EXCEPTION 'execute_quote: the terms given are not the quote''s' USING ERRCODE = 'check_violation';
  END IF;
  IF NOT post_legs(p_partner, o.id, p_slot, p_kinds, p_clients, p_assets, p_amounts) THEN
    UPDATE orders SET status = 'rejected' WHERE id = o.id RETURNING * INTO o;
  END IF;
  RETURN NEXT o;
END;
$$;
