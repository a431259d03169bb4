-- Deposits and withdrawals committed together (docs/decisions.md, "Orders committed together").
--
-- A deposit is one transaction, and its commit waits for its WAL on disk. fund_orders() makes
-- several in one transaction: each exactly as its own statement would (fund_order(), with
-- record_signature() and funding_facts_held() as its arguments when given), in a block with an
-- exception handler, so that a deposit refused (its reference taken, funds short, facts changed, a
-- replayed signature, a deadlock) undoes its own work only and is answered with its own error. The
-- deferred triggers of an order (its event, its count, its postings' balance) are fired at the end
-- of its block, so that what they raise is that order's error too, and the commit has nothing left
-- to refuse.
--
-- Every order comes back as one row: its position in the arrays, then either the order or the
-- SQLSTATE and constraint of its error. QUERY_CANCELED (a statement timeout) is not caught by an
-- exception handler and fails the call as a whole, as does a lost connection: nothing is written.
--
-- Lock order: the service gives at most one order per house slot and partner, in ascending order
-- of the two. Each order locks its client's accounts, then its partner's house accounts of its
-- slot (post_legs()), so every transaction, batched or not, takes its locks in one global order
-- (slot, partner, then a client's accounts before the house's), and batches never wait on each
-- other in a cycle.
-- The partner argument of a batched order's statement, as partnerArgument() gives a lone one: the
-- partner's id, or with a signature (hex), record_signature()'s, which records it or raises.
CREATE FUNCTION batch_partner(
  p_partner uuid,
  p_signature text,
  p_expires timestamptz,
  p_keys text[],
  p_ips text[],
  p_reads integer,
  p_writes integer,
  p_quotes integer
) RETURNS uuid LANGUAGE plpgsql AS $$
BEGIN
  IF p_signature IS NULL THEN
    RETURN p_partner;
  END IF;
  RETURN record_signature(p_partner, decode(p_signature, 'hex'), p_expires, coalesce(p_keys, '{}'),
                          coalesce(p_ips, '{}'), p_reads, p_writes, p_quotes);
END;
$$;

CREATE FUNCTION fund_orders(
  p_partners uuid[],
  -- The signature each order's statement records (hex), or null: no record (record_signature()).
  p_signatures text[],
  p_expires timestamptz[],
  -- Each order's partner keys and allow-list as judged by, flattened; p_key_counts[i] and
  -- p_ip_counts[i] say how many are the i-th order's.
  p_keys text[],
  p_key_counts integer[],
  p_ips text[],
  p_ip_counts integer[],
  p_reads integer[],
  p_writes integer[],
  p_quotes integer[],
  -- The facts each order's request was judged by, when kept by its process (p_held[i]), checked
  -- by funding_facts_held() before the order is written.
  p_held boolean[],
  p_client_refs text[],
  p_statuses text[],
  p_actives boolean[],
  p_asset_types text[],
  p_published boolean[],
  p_depositable boolean[],
  p_withdrawable boolean[],
  -- The orders, and their two legs each, order after order, in lock order (post_legs()).
  p_clients bigint[],
  p_refs text[],
  p_types text[],
  p_assets text[],
  p_amounts numeric[],
  p_slots smallint[],
  p_leg_kinds text[],
  p_leg_clients bigint[],
  p_leg_assets text[],
  p_leg_amounts numeric[]
) RETURNS TABLE (item integer, error_code text, error_constraint text, o orders)
LANGUAGE plpgsql AS $$
DECLARE
  n integer := coalesce(array_length(p_partners, 1), 0);
  key_at integer := 1;
  ip_at integer := 1;
  partner uuid;
  client bigint;
BEGIN
  IF coalesce(array_length(p_signatures, 1), 0) <> n OR coalesce(array_length(p_expires, 1), 0) <> n
     OR coalesce(array_length(p_key_counts, 1), 0) <> n OR coalesce(array_length(p_ip_counts, 1), 0) <> n
     OR coalesce(array_length(p_reads, 1), 0) <> n OR coalesce(array_length(p_writes, 1), 0) <> n
     OR coalesce(array_length(p_quotes, 1), 0) <> n OR coalesce(array_length(p_held, 1), 0) <> n
     OR coalesce(array_length(p_client_refs, 1), 0) <> n OR coalesce(array_length(p_statuses, 1), 0) <> n
     OR coalesce(array_length(p_actives, 1), 0) <> n OR coalesce(array_length(p_asset_types, 1), 0) <> n
     OR coalesce(array_length(p_published, 1), 0) <> n OR coalesce(array_length(p_depositable, 1), 0) <> n
     OR coalesce(array_length(p_withdrawable, 1), 0) <> n OR coalesce(array_length(p_clients, 1), 0) <> n
     OR coalesce(array_length(p_refs, 1), 0) <> n OR coalesce(array_length(p_types, 1), 0) <> n
     OR coalesce(array_length(p_assets, 1), 0) <> n OR coalesce(array_length(p_amounts, 1), 0) <> n
     OR coalesce(array_length(p_slots, 1), 0) <> n
     OR coalesce(array_length(p_leg_kinds, 1), 0) <> 2 * n OR coalesce(array_length(p_leg_clients, 1), 0) <> 2 * n
     OR coalesce(array_length(p_leg_assets, 1), 0) <> 2 * n OR coalesce(array_length(p_leg_amounts, 1), 0) <> 2 * n
     OR coalesce(array_length(p_keys, 1), 0) <> (SELECT coalesce(sum(c), 0) FROM unnest(p_key_counts) AS c)
     OR coalesce(array_length(p_ips, 1), 0) <> (SELECT coalesce(sum(c), 0) FROM unnest(p_ip_counts) AS c) THEN
    RAISE EXCEPTION 'fund_orders: the arrays differ in length' USING ERRCODE = 'check_violation';
  END IF;
  IF EXISTS (SELECT 1 FROM unnest(p_slots, p_partners) WITH ORDINALITY AS s(slot, partner, i)
             JOIN unnest(p_slots, p_partners) WITH ORDINALITY AS t(slot, partner, j) ON t.j = s.i + 1
             WHERE (t.slot, t.partner) <= (s.slot, s.partner)) THEN
    RAISE EXCEPTION 'fund_orders: the orders are not in ascending house slot and partner' USING ERRCODE = 'check_violation';
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
        client := funding_facts_held(p_partners[i], p_clients[i], p_client_refs[i], p_statuses[i],
                                     p_actives[i], p_assets[i], p_asset_types[i], p_published[i],
                                     p_depositable[i], p_withdrawable[i]);
      ELSE
        client := p_clients[i];
      END IF;
      SELECT * INTO STRICT o FROM fund_order(partner, client, p_refs[i], p_types[i], p_assets[i], p_amounts[i],
                                             p_slots[i], p_leg_kinds[2 * i - 1 : 2 * i],
                                             p_leg_clients[2 * i - 1 : 2 * i], p_leg_assets[2 * i - 1 : 2 * i],
                                             p_leg_amounts[2 * i - 1 : 2 * i]);
      -- The order's deferred triggers fire here, in its block, rather than at the commit.
      SET CONSTRAINTS ALL IMMEDIATE;
      SET CONSTRAINTS ALL DEFERRED;
    EXCEPTION WHEN OTHERS THEN
      GET STACKED DIAGNOSTICS error_code = RETURNED_SQLSTATE, error_constraint = CONSTRAINT_NAME;
      o := NULL;
    END;
    key_at := key_at + p_key_counts[i];
    ip_at := ip_at + p_ip_counts[i];
    RETURN NEXT;
  END LOOP;
END;
$$;
