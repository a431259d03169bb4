-- The replay guard holds each accepted signature for 61 s. It is written on every state-changing
-- request, before the operation's own transaction; as a logged table that meant a second WAL flush
-- per request. Unlogged, it costs no WAL. After a crash PostgreSQL empties it: the signatures of the
-- last minute could then be replayed, but every state change a replay could repeat is guarded by
-- state that is logged (partner_order_ref and client uniqueness, spent quote tokens).
ALTER TABLE used_signatures SET UNLOGGED;
