-- A partner's orders by time (migration 0004) carry each order's status and source as well, so that
-- a page under a status or a source is found on the index alone (docs/decisions.md, "A page under a
-- status or a source found on the index"). Without them, each order the page passes over is read from
-- the table to learn its status: a client's page under a status it has none of read every order of
-- the client (1,000 of them at a million orders) to return nothing. With them, the page's order ids
-- are read in an index-only scan, filtered on the index, and only the page's own orders are read
-- from the table (orders-store.ts). The totals counted under such a filter are index-only too.
--
-- INCLUDE, not key columns: a key column after `id` would order nothing, and PostgreSQL (before 17)
-- does not use `status = any(...)` on a later column as an index condition of an ordered scan.
--
-- Ascending, read backward for the newest first. Kept descending, each new order, the partner's
-- newest, went to the front of the partner's entries, and a full page split in halves of which the
-- latter never took another entry: grown by a million orders, the partner's index was 119 MB,
-- against 67 MB ascending, where PostgreSQL fills the page of the newest entries before it splits
-- (docs/decisions.md, "A page under a status or a source found on the index").
--
-- Each index is built anew and takes the old one's name. The builds hold orders' writes for their
-- time (one transaction, as every migration: about 1.3 s per index at a million orders); reads
-- wait only for the drops at the end.

CREATE INDEX orders_partner_created_kinds ON orders (partner_id, created_at, id)
  INCLUDE (status, source);
CREATE INDEX orders_partner_client_created_kinds ON orders (partner_id, client_id, created_at, id)
  INCLUDE (status, source);
-- Dropped last: DROP INDEX locks orders against reads as well, to the migration's commit.
DROP INDEX orders_partner_created;
DROP INDEX orders_partner_client_created;
ALTER INDEX orders_partner_created_kinds RENAME TO orders_partner_created;
ALTER INDEX orders_partner_client_created_kinds RENAME TO orders_partner_client_created;
