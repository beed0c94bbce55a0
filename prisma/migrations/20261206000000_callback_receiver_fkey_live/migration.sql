-- migrate: outside a transaction
--
-- callback.receiver_id keeps its foreign key on callback_live only, the partition where
-- callbacks are stored (the ingest, an event, an operator event) and where a retry or a
-- recovery moves a finished one back; the time partitions of finished callbacks have
-- none. Postgres checks a foreign key row by row, as a query of its own: one lookup of
-- the receiver per row that a write-back moves into its time partition, which a moved
-- row needs no more than an updated one (its receiver_id does not change). What the
-- key guards holds for finished rows by construction:
-- - a finished row got its receiver_id in callback_live, checked there;
-- - the only delete of a receiver is its delete task's last chunk, which first detached
--   every callback naming it, finished ones included (receiver_id = NULL, through
--   callback_receiver_idx over all partitions), and deletes the row only once none is
--   left; a row moved into a time partition meanwhile is one that task walks (a move
--   beside its chunk waits for the chunk's row locks, or the chunk for the move's);
-- - ON DELETE SET NULL on callback_live still closes the race of a callback stored for a
--   receiver whose row is being deleted.
-- Each statement its own transaction: the check of the rows in callback_live runs under
-- a lock that lets reads and writes through, and each step can run again.
ALTER TABLE "callback_live" DROP CONSTRAINT IF EXISTS "callback_live_receiver_id_fkey";
ALTER TABLE "callback_live" ADD CONSTRAINT "callback_live_receiver_id_fkey" FOREIGN KEY ("receiver_id") REFERENCES "receiver"("id") ON DELETE SET NULL ON UPDATE CASCADE NOT VALID;
ALTER TABLE "callback_live" VALIDATE CONSTRAINT "callback_live_receiver_id_fkey";
ALTER TABLE "callback" DROP CONSTRAINT IF EXISTS "callback_receiver_id_fkey";
