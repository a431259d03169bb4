-- The kept counts of orders by partner as well as by client (docs/decisions.md, "An orders page's
-- total from kept counts"). A page without a client filter totalled the rows of every client of the
-- partner in order_counts, three or so per client: 0.3 ms at 1,000 clients, 45 ms at 100,000, on
-- every page. It now sums a partner's rows here: at most 64 per source and status, whatever the
-- number of its clients.
--
-- One row per house slot (the client's id mod 64, as houseSlot() in modules/ledger/legs.ts gives
-- it), source and status, for the reason order_counts has one per client: an order writes the row
-- of its own slot, and an order already takes its partner's house accounts of that slot. The
-- service gives a transaction its orders in ascending order of slot and partner (migration 0024),
-- and the row is written in the order's turn (at its block's end in a batch, at commit alone), so
-- every transaction still takes its locks in one global order, and two transactions whose orders
-- have different slots never wait for each other here. Orders of one slot waited for each other
-- already, on the house accounts, but for an order that posts nothing (an execute rejected for
-- funds short, migration 0009): it now waits for the commit of an order of its slot under way.

-- No order is written or changed while the counts are taken and the trigger changed: each waits
-- for this migration's commit, and the migration for those already under way (their counts then
-- in order_counts). Taken first, so that the migration holds no other lock while it waits.
LOCK TABLE orders IN SHARE ROW EXCLUSIVE MODE;

-- No reference to partners, as order_counts has none: an order's partner is one already.
CREATE TABLE order_slot_counts (
  partner_id uuid NOT NULL,
  status text NOT NULL,
  source text NOT NULL,
  slot smallint NOT NULL CHECK (slot BETWEEN 0 AND 63),
  orders bigint NOT NULL CHECK (orders >= 0),
  PRIMARY KEY (partner_id, status, source, slot)
) WITH (fillfactor = 50);

CREATE OR REPLACE FUNCTION count_order() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  today date := (now() AT TIME ZONE 'UTC')::date;
  old_day date;
  new_day date := (NEW.created_at AT TIME ZONE 'UTC')::date;
  rolled_until date;
BEGIN
  IF TG_OP = 'UPDATE' THEN
    UPDATE order_counts SET orders = orders - 1
     WHERE client_id = OLD.client_id AND source = OLD.source AND status = OLD.status;
    UPDATE order_slot_counts SET orders = orders - 1
     WHERE partner_id = OLD.partner_id AND status = OLD.status AND source = OLD.source
       AND slot = OLD.client_id % 64;
    old_day := (OLD.created_at AT TIME ZONE 'UTC')::date;
  END IF;
  -- The rows are there but for a client's or a slot's first order of a kind: updated, as an
  -- upsert would do after it locks the row (one more write to the WAL); inserted when missing,
  -- by an upsert, as another transaction may be inserting it too.
  UPDATE order_counts SET orders = orders + 1
   WHERE client_id = NEW.client_id AND source = NEW.source AND status = NEW.status;
  IF NOT FOUND THEN
    INSERT INTO order_counts AS c (client_id, source, status, partner_id, orders)
    VALUES (NEW.client_id, NEW.source, NEW.status, NEW.partner_id, 1)
    ON CONFLICT (client_id, source, status) DO UPDATE SET orders = c.orders + 1;
  END IF;
  UPDATE order_slot_counts SET orders = orders + 1
   WHERE partner_id = NEW.partner_id AND status = NEW.status AND source = NEW.source
     AND slot = NEW.client_id % 64;
  IF NOT FOUND THEN
    INSERT INTO order_slot_counts AS s (partner_id, status, source, slot, orders)
    VALUES (NEW.partner_id, NEW.status, NEW.source, NEW.client_id % 64, 1)
    ON CONFLICT (partner_id, status, source, slot) DO UPDATE SET orders = s.orders + 1;
  END IF;
  -- An order of its transaction's day, or later, is in no day rolled up (migration 0026).
  IF new_day < today OR old_day < today THEN
    PERFORM pg_advisory_xact_lock_shared(73462019, hashtext(NEW.partner_id::text));
    SELECT r.until INTO rolled_until FROM order_days_rolled r WHERE r.partner_id = NEW.partner_id;
    IF old_day < rolled_until THEN
      UPDATE order_day_counts SET orders = orders - 1
       WHERE partner_id = OLD.partner_id AND day = old_day AND status = OLD.status AND source = OLD.source;
    END IF;
    IF new_day < rolled_until THEN
      INSERT INTO order_day_counts AS d (partner_id, day, status, source, orders)
      VALUES (NEW.partner_id, new_day, NEW.status, NEW.source, 1)
      ON CONFLICT (partner_id, day, status, source) DO UPDATE SET orders = d.orders + 1;
    END IF;
  END IF;
  RETURN NULL;
END;
$$;

-- The orders already there, from their clients' counts (true under the lock above).
INSERT INTO order_slot_counts (partner_id, status, source, slot, orders)
SELECT partner_id, status, source, (client_id % 64)::smallint, sum(orders)
  FROM order_counts
 GROUP BY partner_id, status, source, client_id % 64
HAVING sum(orders) > 0;
