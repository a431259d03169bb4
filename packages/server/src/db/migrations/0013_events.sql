-- Events (docs/reference.md, "Events"): what happened to a partner's orders, clients and
-- documents, written in the same transaction as the change (a transactional outbox), so no event
-- is lost and none exists for a change that rolled back.
--
-- Order: an event's position is (txid, seq): the id of the transaction that wrote it, then a
-- sequence number. A sequence number alone is not enough, as transactions commit in another order
-- than they draw numbers: a reader could see 5 while 4 is still uncommitted, and a cursor past 5
-- would skip 4 for ever. The feed serves only events of transactions older than the oldest one
-- still in flight (pg_snapshot_xmin of the reader's snapshot): those are all committed or gone, and
-- every event written later has a txid at least that high, so it sorts after everything served.
--
-- Events of orders and documents keep a reference (order_id, document_id) and their `data` is the
-- resource rendered when read: orders are final and documents never change, so it is the resource
-- as it was written. Events of clients, which do change, keep the client as it was (`data`, the
-- exact JSON text the partner API returned).
CREATE TABLE events (
  seq bigint GENERATED ALWAYS AS IDENTITY,
  txid xid8 NOT NULL DEFAULT pg_current_xact_id(),
  partner_id uuid NOT NULL,
  client_id bigint NOT NULL,
  -- order.<the order's status>: completed and rejected are the statuses orders are made with.
  type text NOT NULL CHECK (
    type ~ '^order\.[a-z_]+$'
    OR type IN ('client.created', 'client.updated', 'client.status_changed',
                'client.activation_changed', 'document.created')
  ),
  order_id bigint,
  document_id bigint,
  data json,
  created_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (partner_id, txid, seq),
  CHECK ((type LIKE 'order.%') = (order_id IS NOT NULL)),
  CHECK ((type = 'document.created') = (document_id IS NOT NULL)),
  CHECK ((type LIKE 'client.%') = (data IS NOT NULL))
);

-- The partner_client_id filter of the feed.
CREATE INDEX events_client ON events (client_id, txid, seq);

-- Retention: housekeeping deletes by age; BRIN costs the writers next to nothing.
CREATE INDEX events_created ON events USING brin (created_at);

-- Every order writes one event, whichever path made it (fund_order(), execute_quote(), or any
-- later one), with its final status: the trigger runs at commit, after execute_quote() may have
-- turned the order to rejected in the same transaction.
CREATE FUNCTION order_event() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO events (partner_id, client_id, type, order_id, created_at)
  SELECT o.partner_id, o.client_id, 'order.' || o.status, o.id, o.created_at
  FROM orders o WHERE o.id = NEW.id;
  RETURN NULL;
END;
$$;

CREATE CONSTRAINT TRIGGER orders_event AFTER INSERT ON orders
  DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION order_event();

-- Every document writes document.created, in the transaction that records it.
CREATE FUNCTION document_event() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO events (partner_id, client_id, type, document_id, created_at)
  SELECT c.partner_id, c.id, 'document.created', NEW.id, NEW.created_at
  FROM clients c WHERE c.id = NEW.client_id;
  RETURN NULL;
END;
$$;

CREATE TRIGGER client_documents_event AFTER INSERT ON client_documents
  FOR EACH ROW EXECUTE FUNCTION document_event();
