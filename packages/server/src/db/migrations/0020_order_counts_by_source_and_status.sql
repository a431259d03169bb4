-- The kept counts of orders (migration 0019) by source and status as well as by client, so that an
-- orders page filtered by source or status reads its total from them too (docs/decisions.md, "An
-- orders page's total from kept counts"). A partner with 600,000 completed orders out of a million:
-- `?status=completed` counted them (140 ms); it now sums a few rows per client.
--
-- An order's source and status are counted as they stand at commit: an order is counted under what
-- it was written with (the insert's trigger), and every change of its source or status moves it
-- from the old row to the new one (the update's). Both run at commit, in the order their events
-- happened, so an execute that writes its order completed and turns it rejected in the same
-- transaction (migration 0009) counts one rejected order. Every row a transaction writes here is
-- one of its own client's, as before: no two clients' orders wait for each other.

-- No order is written, nor its status changed, while the counts are rebuilt: the lock is held to
-- this migration's commit.
LOCK TABLE orders IN SHARE ROW EXCLUSIVE MODE;

DROP TRIGGER orders_counted ON orders;
DROP TABLE order_counts;
DROP FUNCTION count_order();

CREATE TABLE order_counts (
  client_id bigint NOT NULL REFERENCES clients (id),
  source text NOT NULL,
  status text NOT NULL,
  partner_id uuid NOT NULL,
  orders bigint NOT NULL CHECK (orders >= 0),
  PRIMARY KEY (client_id, source, status)
) WITH (fillfactor = 50);

-- A partner's rows, by status (the filter most asked for) then source: the total under a status
-- filter reads the partner's rows of that status only, never another partner's.
CREATE INDEX order_counts_partner ON order_counts (partner_id, status, source);

CREATE FUNCTION count_order() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'UPDATE' THEN
    UPDATE order_counts SET orders = orders - 1
     WHERE client_id = OLD.client_id AND source = OLD.source AND status = OLD.status;
  END IF;
  INSERT INTO order_counts AS c (client_id, source, status, partner_id, orders)
  VALUES (NEW.client_id, NEW.source, NEW.status, NEW.partner_id, 1)
  ON CONFLICT (client_id, source, status) DO UPDATE SET orders = c.orders + 1;
  RETURN NULL;
END;
$$;

CREATE CONSTRAINT TRIGGER orders_counted AFTER INSERT ON orders
  DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION count_order();

CREATE CONSTRAINT TRIGGER orders_recounted AFTER UPDATE OF source, status ON orders
  DEFERRABLE INITIALLY DEFERRED FOR EACH ROW
  WHEN (OLD.source IS DISTINCT FROM NEW.source OR OLD.status IS DISTINCT FROM NEW.status)
  EXECUTE FUNCTION count_order();

INSERT INTO order_counts (client_id, source, status, partner_id, orders)
SELECT client_id, source, status, partner_id, count(*) FROM orders
 GROUP BY client_id, source, status, partner_id;
