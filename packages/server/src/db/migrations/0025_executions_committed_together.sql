-- Executes committed together (docs/decisions.md, "Orders committed together"), as deposits and
-- withdrawals are by fund_orders() (migration 0024): execute_quotes() makes several trades in one
-- transaction, each exactly as its own statement would (execute_quote(), with record_signature()
-- and client_standing_held() as its arguments when given), in a block with an exception handler,
-- so that a trade refused (its reference taken, its token spent or expired, its client changed, a
-- replayed signature, a deadlock) undoes its own work only and is answered with its own error. A
-- trade whose funds are gone is made rejected, as alone. The deferred triggers of an order (its
-- event, its count, its postings' balance) are fired at the end of its block: an order turned
-- rejected in its block is counted and told once, as rejected, as at a lone trade's commit.
--
-- Every trade comes back as one row: its position in the arrays, then either the order or the
-- SQLSTATE and constraint of its error. QUERY_CANCELED (a statement timeout) is not caught by an
-- exception handler and fails the call as a whole, as does a lost connection: nothing is written.
--
-- Lock order: as fund_orders(), at most one trade per house slot and partner, in ascending order
-- of the two. A trade locks its order's reference, its quote, its client's accounts, then its
-- partner's house accounts of its slot: everything but the house accounts is its client's own.
CREATE FUNCTION execute_quotes(
  p_partners uuid[],
  -- The signature each trade's statement records (hex), or null (record_signature()); the
  -- partner's keys and allow-list as judged by, flattened, with how many are each trade's.
  p_signatures text[],
  p_expires timestamptz[],
  p_keys text[],
  p_key_counts integer[],
  p_ips text[],
  p_ip_counts integer[],
  p_reads integer[],
  p_writes integer[],
  p_quotes integer[],
  -- The client's standing as kept with the quote (p_held[i]), checked by client_standing_held().
  p_held boolean[],
  p_client_refs text[],
  p_statuses text[],
  p_actives boolean[],
  -- The trades, as execute_quote() takes them; a null p_nows[i] is the transaction's now().
  p_clients bigint[],
  p_refs text[],
  p_token_hashes text[],
  p_nows timestamptz[],
  p_sides text[],
  p_prices numeric[],
  p_debits numeric[],
  p_debit_assets text[],
  p_credits numeric[],
  p_credit_assets text[],
  p_fees numeric[],
  p_fee_assets text[],
  p_vats numeric[],
  p_slots smallint[],
  -- Each trade's legs, trade after trade, in lock order (post_legs()), p_leg_counts[i] of them.
  p_leg_counts integer[],
  p_leg_kinds text[],
  p_leg_clients bigint[],
  p_leg_assets text[],
  p_leg_amounts numeric[]
) RETURNS TABLE (item integer, error_code text, error_constraint text, o orders)
LANGUAGE plpgsql AS $$
DECLARE
  n integer := coalesce(array_length(p_partners, 1), 0);
  legs integer := (SELECT coalesce(sum(c), 0) FROM unnest(p_leg_counts) AS c);
  key_at integer := 1;
  ip_at integer := 1;
  leg_at integer := 1;
  partner uuid;
  client bigint;
BEGIN
  IF EXISTS (
       SELECT 1 FROM unnest(ARRAY[
         array_length(p_signatures, 1), array_length(p_expires, 1), array_length(p_key_counts, 1),
         array_length(p_ip_counts, 1), array_length(p_reads, 1), array_length(p_writes, 1),
         array_length(p_quotes, 1), array_length(p_held, 1), array_length(p_client_refs, 1),
         array_length(p_statuses, 1), array_length(p_actives, 1), array_length(p_clients, 1),
         array_length(p_refs, 1), array_length(p_token_hashes, 1), array_length(p_nows, 1),
         array_length(p_sides, 1), array_length(p_prices, 1), array_length(p_debits, 1),
         array_length(p_debit_assets, 1), array_length(p_credits, 1), array_length(p_credit_assets, 1),
         array_length(p_fees, 1), array_length(p_fee_assets, 1), array_length(p_vats, 1),
         array_length(p_slots, 1), array_length(p_leg_counts, 1)]) AS l
       WHERE l IS DISTINCT FROM n)
     OR n = 0
     OR array_length(p_leg_kinds, 1) IS DISTINCT FROM legs OR array_length(p_leg_clients, 1) IS DISTINCT FROM legs
     OR array_length(p_leg_assets, 1) IS DISTINCT FROM legs OR array_length(p_leg_amounts, 1) IS DISTINCT FROM legs
     OR coalesce(array_length(p_keys, 1), 0) <> (SELECT coalesce(sum(c), 0) FROM unnest(p_key_counts) AS c)
     OR coalesce(array_length(p_ips, 1), 0) <> (SELECT coalesce(sum(c), 0) FROM unnest(p_ip_counts) AS c) THEN
    RAISE EXCEPTION 'execute_quotes: the arrays differ in length' USING ERRCODE = 'check_violation';
  END IF;
  IF EXISTS (SELECT 1 FROM unnest(p_slots, p_partners) WITH ORDINALITY AS s(slot, partner, i)
             JOIN unnest(p_slots, p_partners) WITH ORDINALITY AS t(slot, partner, j) ON t.j = s.i + 1
             WHERE (t.slot, t.partner) <= (s.slot, s.partner)) THEN
    RAISE EXCEPTION 'execute_quotes: the trades are not in ascending house slot and partner' USING ERRCODE = 'check_violation';
  END IF;
  FOR i IN 1 .. n LOOP
    item := i;
    error_code := NULL;
    error_constraint := NULL;
    o := NULL;
    BEGIN
      partner := batch_partner(p_partners[i], p_signatures[i], p_expires[i],
                               p_keys[key_at : key_at + p_key_counts[i] - 1], p_ips[ip_at : ip_at + p_ip_counts[i] - 1],
                               p_reads[i], p_writes[i], p_quotes[i]);
      IF p_held[i] THEN
        client := client_standing_held(p_partners[i], p_clients[i], p_client_refs[i], p_statuses[i], p_actives[i]);
      ELSE
        client := p_clients[i];
      END IF;
      SELECT * INTO STRICT o FROM execute_quote(
        partner, client, p_refs[i], decode(p_token_hashes[i], 'hex'), coalesce(p_nows[i], now()), p_sides[i],
        p_prices[i], p_debits[i], p_debit_assets[i], p_credits[i], p_credit_assets[i], p_fees[i],
        p_fee_assets[i], p_vats[i], p_slots[i],
        p_leg_kinds[leg_at : leg_at + p_leg_counts[i] - 1], p_leg_clients[leg_at : leg_at + p_leg_counts[i] - 1],
        p_leg_assets[leg_at : leg_at + p_leg_counts[i] - 1], p_leg_amounts[leg_at : leg_at + p_leg_counts[i] - 1]);
      -- The order's deferred triggers fire here, in its block, rather than at the commit.
      SET CONSTRAINTS ALL IMMEDIATE;
      SET CONSTRAINTS ALL DEFERRED;
    EXCEPTION WHEN OTHERS THEN
      GET STACKED DIAGNOSTICS error_code = RETURNED_SQLSTATE, error_constraint = CONSTRAINT_NAME;
      o := NULL;
    END;
    key_at := key_at + p_key_counts[i];
    ip_at := ip_at + p_ip_counts[i];
    leg_at := leg_at + p_leg_counts[i];
    RETURN NEXT;
  END LOOP;
END;
$$;
