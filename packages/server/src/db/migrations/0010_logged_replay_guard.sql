-- The replay guard is logged again (docs/decisions.md, "The replay guard survives a crash"). An
-- unlogged table is emptied by crash recovery, and then every state-changing request of the last
-- minute could be replayed: not all of them are guarded by other logged state (a client update,
-- an activation, a document upload). Measured, the logged record costs little: its WAL flush joins
-- the group commit of the operation's own transaction.
ALTER TABLE used_signatures SET LOGGED;
