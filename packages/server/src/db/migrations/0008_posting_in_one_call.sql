-- Throughput of the order path (issue "Money", point 7), measured with pgbench replicas of a
-- deposit (docs/decisions.md, "One call per order"):
--
-- 1. Posting an order's legs is one function call, post_legs(), instead of a statement per
--    account and one for the postings; a deposit or a withdrawal is one call, fund_order(), that
--    inserts the order and posts it. Fewer round trips is most of the gain, on both sides.
-- 2. Foreign keys that made every order lock a row all orders share (the partner's, and the
--    asset's from each posting) become composite keys that lock only rows the order already holds
--    or its own client's, and that say more: an order's client belongs to the order's partner, and
--    a posting's asset is its account's asset.
-- 3. The balanced-postings rule is checked once per INSERT statement over the rows it adds, not
--    by a deferred trigger that queried the table again for every row. Each statement's postings
--    balance per order and asset, and postings are never updated or deleted, so every order's
--    postings balance.

-- 2. Keys.
ALTER TABLE clients ADD CONSTRAINT clients_partner_id_id_key UNIQUE (partner_id, id);
ALTER TABLE orders DROP CONSTRAINT orders_partner_id_fkey;
ALTER TABLE orders DROP CONSTRAINT orders_client_id_fkey;
ALTER TABLE orders ADD CONSTRAINT orders_client_fkey
  FOREIGN KEY (partner_id, client_id) REFERENCES clients (partner_id, id);

ALTER TABLE accounts ADD CONSTRAINT accounts_id_asset_key UNIQUE (id, asset_id);
ALTER TABLE postings DROP CONSTRAINT postings_account_id_fkey;
ALTER TABLE postings DROP CONSTRAINT postings_asset_id_fkey;
ALTER TABLE postings ADD CONSTRAINT postings_account_fkey
  FOREIGN KEY (account_id, asset_id) REFERENCES accounts (id, asset_id);

-- The replay guard is an unlogged record of the last minute's signatures, written only after the
-- partner row was read in the same statement (partners are never deleted); its key on partners
-- made every signed POST of a partner lock that partner's row.
ALTER TABLE used_signatures DROP CONSTRAINT used_signatures_partner_id_fkey;

-- 3. Balanced postings, per statement; postings are append-only.
DROP TRIGGER postings_balanced ON postings;
DROP FUNCTION postings_balance_per_order();

CREATE FUNCTION postings_balanced_per_statement() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  bad record;
BEGIN
  SELECT order_id, asset_id INTO bad FROM new_postings
  GROUP BY order_id, asset_id HAVING sum(amount) <> 0 LIMIT 1;
  IF FOUND THEN
    RAISE EXCEPTION 'postings of order % do not balance in %', bad.order_id, bad.asset_id
      USING ERRCODE = 'check_violation';
  END IF;
  RETURN NULL;
END;
$$;

CREATE TRIGGER postings_balanced
  AFTER INSERT ON postings REFERENCING NEW TABLE AS new_postings
  FOR EACH STATEMENT EXECUTE FUNCTION postings_balanced_per_statement();

CREATE FUNCTION postings_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'postings are append-only' USING ERRCODE = 'check_violation';
END;
$$;

CREATE TRIGGER postings_append_only
  BEFORE UPDATE OR DELETE ON postings
  FOR EACH STATEMENT EXECUTE FUNCTION postings_append_only();

-- 1. Posting.
--
-- post_legs applies one order's legs, given in lock order (client accounts by asset, then house
-- accounts by kind and asset: the caller sorts them, see ledger-store.ts). A client leg that would
-- take the available balance below zero makes it return false before anything is written: with
-- several client legs and a debit among them, the client's accounts are first locked in asset
-- order and every debit is checked; a single client debit is one guarded update, and it comes
-- first. House legs go to the given slot. Returns true when the legs are posted.
CREATE FUNCTION post_legs(
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
BEGIN
  FOR i IN 1 .. n LOOP
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

-- fund_order records a completed deposit or withdrawal (source bank) of a client's fiat and posts
-- it against the partner's omnibus account in the given slot, in the caller's transaction (or as
-- one statement). The order row goes in first: a concurrent request with the same reference waits
-- on the unique index and then fails (23505), whatever this one does to the balance. A withdrawal
-- the available balance does not cover raises SQLSTATE CP001, and nothing stays written.
CREATE FUNCTION fund_order(
  p_partner uuid,
  p_client bigint,
  p_ref text,
  p_type text,
  p_asset text,
  p_amount numeric,
  p_slot smallint
) RETURNS SETOF orders LANGUAGE plpgsql AS $$
DECLARE
  o orders;
  signed numeric := CASE p_type WHEN 'deposit' THEN p_amount WHEN 'withdrawal' THEN -p_amount END;
BEGIN
  IF signed IS NULL OR p_amount <= 0 THEN
    RAISE EXCEPTION 'fund_order: bad type % or amount %', p_type, p_amount USING ERRCODE = 'check_violation';
  END IF;
  INSERT INTO orders (partner_id, client_id, partner_order_ref, type, source, status,
                      debit, debit_asset_id, credit, credit_asset_id, fee, fee_asset_id, vat)
  VALUES (p_partner, p_client, p_ref, p_type, 'bank', 'completed',
          CASE WHEN signed > 0 THEN p_amount END, CASE WHEN signed > 0 THEN p_asset END,
          CASE WHEN signed < 0 THEN p_amount END, CASE WHEN signed < 0 THEN p_asset END,
          0, p_asset, 0)
  RETURNING * INTO o;
  IF NOT post_legs(p_partner, o.id, p_slot, ARRAY['client', 'omnibus'], ARRAY[p_client, NULL],
                   ARRAY[p_asset, p_asset], ARRAY[signed, -signed]) THEN
    RAISE EXCEPTION 'insufficient funds' USING ERRCODE = 'CP001';
  END IF;
  RETURN NEXT o;
END;
$$;
