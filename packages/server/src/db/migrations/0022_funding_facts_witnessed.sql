-- A deposit or a withdrawal judged by the facts its process kept, witnessed in the order's own
-- statement (docs/decisions.md, "Funding facts witnessed in the order's statement").
--
-- A funding request is judged on its client (status, active) and its asset (type, published,
-- depositable, withdrawable). The process that judged a request by facts read from the rows keeps
-- them when they let the request through; the next request of that client and asset is then judged
-- by what it kept, without a statement of its own, and fund_order() takes as its client argument
-- funding_facts_held(...), which first checks that the rows still hold exactly what was kept. If
-- not, it raises SQLSTATE CP005 and the caller reads the rows and judges the request again;
-- nothing is written, as the argument is evaluated before fund_order() is called. The rule of the
-- checks stays in the service: this function only says whether the rows changed.
CREATE FUNCTION funding_facts_held(
  p_partner uuid,
  p_client bigint,
  p_partner_client_id text,
  p_status text,
  p_active boolean,
  p_asset text,
  p_type text,
  p_published boolean,
  p_depositable boolean,
  p_withdrawable boolean
) RETURNS bigint LANGUAGE plpgsql AS $$
BEGIN
  IF NOT EXISTS (
    SELECT 1 FROM clients c
    WHERE c.id = p_client AND c.partner_id = p_partner AND c.partner_client_id = p_partner_client_id
      AND c.status = p_status AND c.active = p_active
  ) OR NOT EXISTS (
    SELECT 1 FROM assets a
    WHERE a.id = p_asset AND a.type = p_type AND a.published = p_published
      AND a.depositable = p_depositable AND a.withdrawable = p_withdrawable
  ) THEN
    RAISE EXCEPTION 'funding_facts_held: the client or the asset changed' USING ERRCODE = 'CP005';
  END IF;
  RETURN p_client;
END;
$$;
