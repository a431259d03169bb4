-- The kept counts of orders (migrations 0019, 0020) by day as well, for the totals of pages under a
-- range of dates (docs/decisions.md, "An orders page's total from kept counts"). From 1 June at a
-- million orders counted the 478,000 orders the range kept (141 ms); it now sums a row per day and
-- kind of order, and counts only the orders of the range's partial first and last days.
--
-- A day's row is not written by every order: all of a partner's orders of the day would queue on
-- it. Days are rolled up once they are over, by housekeeping (OrdersService.rollDays): a
-- partner's days before `order_days_rolled.until` are in `order_day_counts`; later ones are not, and
-- a total counts their orders. An order written afterwards into a day already rolled (a time given
-- by hand, a test's clock), or whose source, status or time changes there, moves the day's rows at
-- commit, in count_order(), as it moves the client's.
--
-- Why no order is missed or counted twice when a day is rolled while orders are being written:
--   - An order of a day before its transaction's own (`now()`, UTC) takes the partner's lock below,
--     shared, at commit, then reads `until`. The roll-up takes it exclusively, then counts the day:
--     an order that read `until` before the roll-up holds the lock to its commit, so the roll-up
--     counts it; one that reads it after waits for the roll-up's commit and sees the day rolled, so
--     it adds itself (READ COMMITTED: each statement of the trigger reads what is committed then).
--   - An order of its transaction's own day or later takes no lock: the roll-up never rolls a day
--     on or after the day any transaction still running began (pg_stat_activity.xact_start), nor
--     on or after its own day. Every order the service makes is of its own day, so only orders
--     given a past time by hand pay for the lock.
--
-- The lock: pg_advisory_xact_lock(73462019, hashtext(partner_id::text)); two partners whose hashes
-- meet only wait for each other's roll-up.

CREATE TABLE order_day_counts (
  partner_id uuid NOT NULL,
  day date NOT NULL,
  status text NOT NULL,
  source text NOT NULL,
  orders bigint NOT NULL CHECK (orders >= 0),
  PRIMARY KEY (partner_id, day, status, source)
);

CREATE TABLE order_days_rolled (
  partner_id uuid PRIMARY KEY REFERENCES partners (id),
  until date NOT NULL
);

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
    old_day := (OLD.created_at AT TIME ZONE 'UTC')::date;
  END IF;
  INSERT INTO order_counts AS c (client_id, source, status, partner_id, orders)
  VALUES (NEW.client_id, NEW.source, NEW.status, NEW.partner_id, 1)
  ON CONFLICT (client_id, source, status) DO UPDATE SET orders = c.orders + 1;
  -- An order of its transaction's day, or later, is in no day rolled up (see above).
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

-- An order's time moves its day's count too (it changes only by hand: the service never does it).
DROP TRIGGER orders_recounted ON orders;
CREATE CONSTRAINT TRIGGER orders_recounted AFTER UPDATE OF source, status, created_at ON orders
  DEFERRABLE INITIALLY DEFERRED FOR EACH ROW
  WHEN (OLD.source IS DISTINCT FROM NEW.source OR OLD.status IS DISTINCT FROM NEW.status
        OR OLD.created_at IS DISTINCT FROM NEW.created_at)
  EXECUTE FUNCTION count_order();
