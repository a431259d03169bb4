-- The back office's order list (docs/decisions.md, "Back office records"): every filter it offers
-- pages newest first by keyset on (created_at, id), so each filter has an index in that order.
-- A partner's orders (and a partner's client's) already have theirs (migration 0004); these serve
-- the list across partners, by one client, and by status, type or source. The postings of an
-- order are found by postings_order (migration 0004).

CREATE INDEX orders_created ON orders (created_at DESC, id DESC);
CREATE INDEX orders_client_created ON orders (client_id, created_at DESC, id DESC);
CREATE INDEX orders_status_created ON orders (status, created_at DESC, id DESC);
CREATE INDEX orders_type_created ON orders (type, created_at DESC, id DESC);
CREATE INDEX orders_source_created ON orders (source, created_at DESC, id DESC);
