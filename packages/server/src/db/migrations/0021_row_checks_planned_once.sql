-- The CHECK constraints of the tables every order writes (orders, accounts, events) and of quotes,
-- checked by one PL/pgSQL function per table (docs/decisions.md, "Row checks planned once").
--
-- PostgreSQL reads every CHECK of a table back from its stored text and plans it again at every
-- statement that writes the table (ExecRelCheck: stringToNode, then expression_planner, per
-- executor). A deposit starts five such statements; its CHECKs were about a fifth of PostgreSQL's
-- CPU per deposit (docs/operations.md, "A deposit's database side, part by part"). A PL/pgSQL
-- function's expressions are planned once per connection, so each table now has one CHECK that
-- calls its function with the columns its conditions read.
--
-- The conditions are the same, word for word, and so are the answers: each is tested on its own,
-- in the order PostgreSQL tested them (by name), and the first that is false raises what
-- PostgreSQL raised for it: SQLSTATE 23514, the same message, the constraint's name and the
-- table's (not the failing row's values, which PostgreSQL added as a detail). A condition that is
-- NULL passes, as in a CHECK (IF NOT NULL is not taken). The functions name nothing but their
-- arguments and PostgreSQL's own operators and functions (pg_catalog, searched first), so they
-- do not depend on the schema the tables live in.
--
-- To add a condition to one of these tables, or a column one reads: drop the table's CHECK, replace
-- the function (a new argument list is a new function: drop the old one), add the CHECK again.
-- ADD CONSTRAINT validates every existing row against the new function.

CREATE FUNCTION orders_row_checked(
  type text, source text, status text, partner_order_ref text, price numeric, credit numeric,
  credit_asset_id text, debit numeric, debit_asset_id text, fee numeric, vat numeric
) RETURNS boolean LANGUAGE plpgsql IMMUTABLE AS $$
BEGIN
  IF NOT ((credit IS NULL) = (credit_asset_id IS NULL)) THEN
    RAISE EXCEPTION 'new row for relation "orders" violates check constraint "orders_check"'
      USING ERRCODE = 'check_violation', TABLE = 'orders', CONSTRAINT = 'orders_check';
  END IF;
  IF NOT ((debit IS NULL) = (debit_asset_id IS NULL)) THEN
    RAISE EXCEPTION 'new row for relation "orders" violates check constraint "orders_check1"'
      USING ERRCODE = 'check_violation', TABLE = 'orders', CONSTRAINT = 'orders_check1';
  END IF;
  IF NOT (credit > 0 AND credit <> 'NaN') THEN
    RAISE EXCEPTION 'new row for relation "orders" violates check constraint "orders_credit_check"'
      USING ERRCODE = 'check_violation', TABLE = 'orders', CONSTRAINT = 'orders_credit_check';
  END IF;
  IF NOT (debit > 0 AND debit <> 'NaN') THEN
    RAISE EXCEPTION 'new row for relation "orders" violates check constraint "orders_debit_check"'
      USING ERRCODE = 'check_violation', TABLE = 'orders', CONSTRAINT = 'orders_debit_check';
  END IF;
  IF NOT (fee >= 0 AND fee <> 'NaN') THEN
    RAISE EXCEPTION 'new row for relation "orders" violates check constraint "orders_fee_check"'
      USING ERRCODE = 'check_violation', TABLE = 'orders', CONSTRAINT = 'orders_fee_check';
  END IF;
  IF NOT (length(partner_order_ref) >= 1 AND length(partner_order_ref) <= 255) THEN
    RAISE EXCEPTION 'new row for relation "orders" violates check constraint "orders_partner_order_ref_check"'
      USING ERRCODE = 'check_violation', TABLE = 'orders', CONSTRAINT = 'orders_partner_order_ref_check';
  END IF;
  IF NOT (price > 0 AND price <> 'NaN') THEN
    RAISE EXCEPTION 'new row for relation "orders" violates check constraint "orders_price_check"'
      USING ERRCODE = 'check_violation', TABLE = 'orders', CONSTRAINT = 'orders_price_check';
  END IF;
  IF NOT (source = ANY (ARRAY['bank', 'card', 'blockchain', 'referral', 'bonus', 'market', 'limit',
                              'fee', 'entity_change', 'platform_specific'])) THEN
    RAISE EXCEPTION 'new row for relation "orders" violates check constraint "orders_source_check"'
      USING ERRCODE = 'check_violation', TABLE = 'orders', CONSTRAINT = 'orders_source_check';
  END IF;
  IF NOT (status = ANY (ARRAY['new', 'open', 'pending', 'processing', 'completed', 'expired',
                              'queued_cancel', 'canceled', 'rejected', 'failed'])) THEN
    RAISE EXCEPTION 'new row for relation "orders" violates check constraint "orders_status_check"'
      USING ERRCODE = 'check_violation', TABLE = 'orders', CONSTRAINT = 'orders_status_check';
  END IF;
  IF NOT (type = ANY (ARRAY['deposit', 'withdrawal', 'buy', 'sell'])) THEN
    RAISE EXCEPTION 'new row for relation "orders" violates check constraint "orders_type_check"'
      USING ERRCODE = 'check_violation', TABLE = 'orders', CONSTRAINT = 'orders_type_check';
  END IF;
  IF NOT (vat >= 0 AND vat <> 'NaN') THEN
    RAISE EXCEPTION 'new row for relation "orders" violates check constraint "orders_vat_check"'
      USING ERRCODE = 'check_violation', TABLE = 'orders', CONSTRAINT = 'orders_vat_check';
  END IF;
  RETURN true;
END;
$$;

CREATE FUNCTION accounts_row_checked(
  kind text, client_id bigint, balance numeric, held numeric, slot smallint
) RETURNS boolean LANGUAGE plpgsql IMMUTABLE AS $$
BEGIN
  IF NOT (balance <> 'NaN') THEN
    RAISE EXCEPTION 'new row for relation "accounts" violates check constraint "accounts_balance_check"'
      USING ERRCODE = 'check_violation', TABLE = 'accounts', CONSTRAINT = 'accounts_balance_check';
  END IF;
  IF NOT ((kind = 'client') = (client_id IS NOT NULL)) THEN
    RAISE EXCEPTION 'new row for relation "accounts" violates check constraint "accounts_check"'
      USING ERRCODE = 'check_violation', TABLE = 'accounts', CONSTRAINT = 'accounts_check';
  END IF;
  IF NOT (kind <> 'client' OR (balance >= 0 AND balance - held >= 0)) THEN
    RAISE EXCEPTION 'new row for relation "accounts" violates check constraint "accounts_client_not_negative"'
      USING ERRCODE = 'check_violation', TABLE = 'accounts', CONSTRAINT = 'accounts_client_not_negative';
  END IF;
  IF NOT (kind <> 'client' OR slot = 0) THEN
    RAISE EXCEPTION 'new row for relation "accounts" violates check constraint "accounts_client_slot"'
      USING ERRCODE = 'check_violation', TABLE = 'accounts', CONSTRAINT = 'accounts_client_slot';
  END IF;
  IF NOT (held >= 0 AND held <> 'NaN') THEN
    RAISE EXCEPTION 'new row for relation "accounts" violates check constraint "accounts_held_check"'
      USING ERRCODE = 'check_violation', TABLE = 'accounts', CONSTRAINT = 'accounts_held_check';
  END IF;
  IF NOT (kind = ANY (ARRAY['client', 'omnibus', 'fee_revenue', 'vat_payable'])) THEN
    RAISE EXCEPTION 'new row for relation "accounts" violates check constraint "accounts_kind_check"'
      USING ERRCODE = 'check_violation', TABLE = 'accounts', CONSTRAINT = 'accounts_kind_check';
  END IF;
  IF NOT (slot >= 0 AND slot <= 63) THEN
    RAISE EXCEPTION 'new row for relation "accounts" violates check constraint "accounts_slot_check"'
      USING ERRCODE = 'check_violation', TABLE = 'accounts', CONSTRAINT = 'accounts_slot_check';
  END IF;
  RETURN true;
END;
$$;

CREATE FUNCTION events_row_checked(
  type text, order_id bigint, document_id bigint, data json
) RETURNS boolean LANGUAGE plpgsql IMMUTABLE AS $$
BEGIN
  IF NOT ((type LIKE 'order.%') = (order_id IS NOT NULL)) THEN
    RAISE EXCEPTION 'new row for relation "events" violates check constraint "events_check"'
      USING ERRCODE = 'check_violation', TABLE = 'events', CONSTRAINT = 'events_check';
  END IF;
  IF NOT ((type = 'document.created') = (document_id IS NOT NULL)) THEN
    RAISE EXCEPTION 'new row for relation "events" violates check constraint "events_check1"'
      USING ERRCODE = 'check_violation', TABLE = 'events', CONSTRAINT = 'events_check1';
  END IF;
  IF NOT ((type LIKE 'client.%') = (data IS NOT NULL)) THEN
    RAISE EXCEPTION 'new row for relation "events" violates check constraint "events_check2"'
      USING ERRCODE = 'check_violation', TABLE = 'events', CONSTRAINT = 'events_check2';
  END IF;
  IF NOT (type ~ '^order\.[a-z_]+$'
          OR type = ANY (ARRAY['client.created', 'client.updated', 'client.status_changed',
                               'client.activation_changed', 'document.created'])) THEN
    RAISE EXCEPTION 'new row for relation "events" violates check constraint "events_type_check"'
      USING ERRCODE = 'check_violation', TABLE = 'events', CONSTRAINT = 'events_type_check';
  END IF;
  RETURN true;
END;
$$;

CREATE FUNCTION quotes_row_checked(
  side text, price numeric, base_amount numeric, quote_amount numeric, fee numeric, vat numeric
) RETURNS boolean LANGUAGE plpgsql IMMUTABLE AS $$
BEGIN
  IF NOT (base_amount > 0 AND base_amount <> 'NaN') THEN
    RAISE EXCEPTION 'new row for relation "quotes" violates check constraint "quotes_base_amount_check"'
      USING ERRCODE = 'check_violation', TABLE = 'quotes', CONSTRAINT = 'quotes_base_amount_check';
  END IF;
  IF NOT (fee >= 0 AND fee <> 'NaN') THEN
    RAISE EXCEPTION 'new row for relation "quotes" violates check constraint "quotes_fee_check"'
      USING ERRCODE = 'check_violation', TABLE = 'quotes', CONSTRAINT = 'quotes_fee_check';
  END IF;
  IF NOT (price > 0 AND price <> 'NaN') THEN
    RAISE EXCEPTION 'new row for relation "quotes" violates check constraint "quotes_price_check"'
      USING ERRCODE = 'check_violation', TABLE = 'quotes', CONSTRAINT = 'quotes_price_check';
  END IF;
  IF NOT (quote_amount > 0 AND quote_amount <> 'NaN') THEN
    RAISE EXCEPTION 'new row for relation "quotes" violates check constraint "quotes_quote_amount_check"'
      USING ERRCODE = 'check_violation', TABLE = 'quotes', CONSTRAINT = 'quotes_quote_amount_check';
  END IF;
  IF NOT (side = ANY (ARRAY['buy', 'sell'])) THEN
    RAISE EXCEPTION 'new row for relation "quotes" violates check constraint "quotes_side_check"'
      USING ERRCODE = 'check_violation', TABLE = 'quotes', CONSTRAINT = 'quotes_side_check';
  END IF;
  IF NOT (vat >= 0 AND vat <> 'NaN') THEN
    RAISE EXCEPTION 'new row for relation "quotes" violates check constraint "quotes_vat_check"'
      USING ERRCODE = 'check_violation', TABLE = 'quotes', CONSTRAINT = 'quotes_vat_check';
  END IF;
  RETURN true;
END;
$$;

ALTER TABLE orders
  DROP CONSTRAINT orders_check,
  DROP CONSTRAINT orders_check1,
  DROP CONSTRAINT orders_credit_check,
  DROP CONSTRAINT orders_debit_check,
  DROP CONSTRAINT orders_fee_check,
  DROP CONSTRAINT orders_partner_order_ref_check,
  DROP CONSTRAINT orders_price_check,
  DROP CONSTRAINT orders_source_check,
  DROP CONSTRAINT orders_status_check,
  DROP CONSTRAINT orders_type_check,
  DROP CONSTRAINT orders_vat_check,
  ADD CONSTRAINT orders_row_checked CHECK (orders_row_checked(
    type, source, status, partner_order_ref, price, credit, credit_asset_id, debit, debit_asset_id,
    fee, vat));

ALTER TABLE accounts
  DROP CONSTRAINT accounts_balance_check,
  DROP CONSTRAINT accounts_check,
  DROP CONSTRAINT accounts_client_not_negative,
  DROP CONSTRAINT accounts_client_slot,
  DROP CONSTRAINT accounts_held_check,
  DROP CONSTRAINT accounts_kind_check,
  DROP CONSTRAINT accounts_slot_check,
  ADD CONSTRAINT accounts_row_checked CHECK (accounts_row_checked(kind, client_id, balance, held, slot));

ALTER TABLE events
  DROP CONSTRAINT events_check,
  DROP CONSTRAINT events_check1,
  DROP CONSTRAINT events_check2,
  DROP CONSTRAINT events_type_check,
  ADD CONSTRAINT events_row_checked CHECK (events_row_checked(type, order_id, document_id, data));

ALTER TABLE quotes
  DROP CONSTRAINT quotes_base_amount_check,
  DROP CONSTRAINT quotes_fee_check,
  DROP CONSTRAINT quotes_price_check,
  DROP CONSTRAINT quotes_quote_amount_check,
  DROP CONSTRAINT quotes_side_check,
  DROP CONSTRAINT quotes_vat_check,
  ADD CONSTRAINT quotes_row_checked CHECK (quotes_row_checked(side, price, base_amount, quote_amount, fee, vat));
