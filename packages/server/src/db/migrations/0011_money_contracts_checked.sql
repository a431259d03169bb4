-- The contracts of the money functions are checked where they are assumed (docs/architecture.md,
-- "Money"):
--
-- 1. post_legs() locks the client's accounts, then the house accounts, in the order of its legs;
--    it relied on the caller (the service's orderLegs()) for that order. It now refuses legs out of
--    that order, of an unknown kind, or of two clients, with an error and before anything is
--    written. Its signature and its answers are unchanged.
-- 2. fund_order() built its two legs itself, so the service's rule for legs (orderLegs()) never
--    saw them. It now takes them from the service, as execute_quote() does, and checks that the
--    client's leg is the order's amount: still one statement per deposit or withdrawal.

CREATE OR REPLACE FUNCTION post_legs(
  p_partner uuid,
  p_order bigint,
  p_slot smallint,
  p_kinds text[],
  p_clients bigint[],
  p_assets text[],
  p_amounts numeric[]
) RETURNS boolean LANGUAGE plpgsql AS $$
DECLARE
  n int := cardinality(p_kinds);
  client_legs int := 0;
  has_debit boolean := false;
  account_ids bigint[] := '{}';
  acct bigint;
  short int;
  kind_order constant text[] := ARRAY['client', 'omnibus', 'fee_revenue', 'vat_payable'];
  rank int;
  prev_rank int := 0;
BEGIN
  IF cardinality(p_clients) IS DISTINCT FROM n OR cardinality(p_assets) IS DISTINCT FROM n
     OR cardinality(p_amounts) IS DISTINCT FROM n THEN
    RAISE EXCEPTION 'post_legs: the leg arrays differ in length' USING ERRCODE = 'check_violation';
  END IF;
  FOR i IN 1 .. n LOOP
    -- The lock order this function relies on: client legs first (one client), ordered by asset,
    -- then house legs by kind and asset. Asset ids compare byte by byte (COLLATE "C"), as the
    -- service's orderLegs() sorts them.
    rank := array_position(kind_order, p_kinds[i]);
    IF rank IS NULL THEN
      RAISE EXCEPTION 'post_legs: unknown account kind %', p_kinds[i] USING ERRCODE = 'check_violation';
    END IF;
    IF rank < prev_rank OR (i > 1 AND rank = prev_rank
                            AND p_assets[i] COLLATE "C" < p_assets[i - 1] COLLATE "C") THEN
      RAISE EXCEPTION 'post_legs: legs out of lock order at leg % (client legs by asset, then house legs by kind and asset)', i
        USING ERRCODE = 'check_violation';
    END IF;
    IF p_kinds[i] = 'client' AND p_clients[i] IS DISTINCT FROM p_clients[1] THEN
      RAISE EXCEPTION 'post_legs: the client legs of one order belong to one client' USING ERRCODE = 'check_violation';
    END IF;
    prev_rank := rank;
    IF p_kinds[i] = 'client' THEN
      client_legs := client_legs + 1;
      has_debit := has_debit OR p_amounts[i] < 0;
    END IF;
  END LOOP;

  IF client_legs > 1 AND has_debit THEN
    PERFORM 1 FROM accounts
    WHERE kind = 'client' AND partner_id = p_partner AND client_id = p_clients[1]
      AND asset_id = ANY (p_assets[1:client_legs])
    ORDER BY asset_id
    FOR UPDATE;
    SELECT count(*) INTO short
    FROM unnest(p_assets[1:client_legs], p_amounts[1:client_legs]) AS leg(asset_id, amount)
    LEFT JOIN accounts a
      ON a.kind = 'client' AND a.partner_id = p_partner AND a.client_id = p_clients[1]
     AND a.asset_id = leg.asset_id
    WHERE leg.amount < 0 AND coalesce(a.balance - a.held, 0) + leg.amount < 0;
    IF short > 0 THEN
      RETURN false;
    END IF;
  END IF;

  FOR i IN 1 .. n LOOP
    acct := NULL;
    IF p_kinds[i] = 'client' AND p_amounts[i] < 0 THEN
      UPDATE accounts SET balance = balance + p_amounts[i]
      WHERE kind = 'client' AND partner_id = p_partner AND client_id = p_clients[i]
        AND asset_id = p_assets[i] AND balance - held + p_amounts[i] >= 0
      RETURNING id INTO acct;
      IF acct IS NULL THEN
        RETURN false;
      END IF;
    ELSE
      INSERT INTO accounts AS a (kind, partner_id, client_id, asset_id, balance, slot)
      VALUES (p_kinds[i], p_partner, p_clients[i], p_assets[i], p_amounts[i],
              CASE WHEN p_kinds[i] = 'client' THEN 0 ELSE p_slot END)
      ON CONFLICT ON CONSTRAINT accounts_owner_key DO UPDATE SET balance = a.balance + excluded.balance
      RETURNING id INTO acct;
    END IF;
    account_ids := account_ids || acct;
  END LOOP;

  INSERT INTO postings (order_id, account_id, asset_id, amount)
  SELECT p_order, leg.account_id, leg.asset_id, leg.amount
  FROM unnest(account_ids, p_assets, p_amounts) AS leg(account_id, asset_id, amount);
  RETURN true;
END;
$$;

DROP FUNCTION fund_order(uuid, bigint, text, text, text, numeric, smallint);

-- fund_order records a completed deposit or withdrawal (source bank) of a client's fiat and posts
-- its legs (built by the service, in lock order, see post_legs) in the given slot, in the caller's
-- transaction (or as one statement). The order row goes in first: a concurrent request with the
-- same reference waits on the unique index and then fails (23505), whatever this one does to the
-- balance. A withdrawal the available balance does not cover raises SQLSTATE CP001, and nothing
-- stays written.
CREATE FUNCTION fund_order(
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
  signed numeric := CASE p_type WHEN 'deposit' THEN p_amount WHEN 'withdrawal' THEN -p_amount END;
  client_amount numeric;
BEGIN
  IF signed IS NULL OR p_amount <= 0 THEN
    RAISE EXCEPTION 'fund_order: bad type % or amount %', p_type, p_amount USING ERRCODE = 'check_violation';
  END IF;
  SELECT sum(leg.amount) INTO client_amount
  FROM unnest(p_kinds, p_clients, p_assets, p_amounts) AS leg(kind, client_id, asset_id, amount)
  WHERE leg.kind = 'client' AND leg.client_id = p_client AND leg.asset_id = p_asset;
  IF client_amount IS DISTINCT FROM signed
     OR (SELECT count(*) FROM unnest(p_kinds) AS k WHERE k = 'client') <> 1 THEN
    RAISE EXCEPTION 'fund_order: the legs do not move % % of client %', signed, p_asset, p_client
      USING ERRCODE = 'check_violation';
  END IF;
  INSERT INTO orders (partner_id, client_id, partner_order_ref, type, source, status,
                      debit, debit_asset_id, credit, credit_asset_id, fee, fee_asset_id, vat)
  VALUES (p_partner, p_client, p_ref, p_type, 'bank', 'completed',
          CASE WHEN signed > 0 THEN p_amount END, CASE WHEN signed > 0 THEN p_asset END,
          CASE WHEN signed < 0 THEN p_amount END, CASE WHEN signed < 0 THEN p_asset END,
          0, p_asset, 0)
  RETURNING * INTO o;
  IF NOT post_legs(p_partner, o.id, p_slot, p_kinds, p_clients, p_assets, p_amounts) THEN
    RAISE EXCEPTION 'insufficient funds' USING ERRCODE = 'CP001';
  END IF;
  RETURN NEXT o;
END;
$$;
