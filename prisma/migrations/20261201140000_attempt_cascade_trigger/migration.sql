-- Attempts go with their callback through a statement trigger instead of a foreign key.
--
-- The foreign key checked every inserted attempt with a query of its own (a lookup of
-- the callback and a KEY SHARE lock on it): 4 µs of Postgres CPU per attempt, a sixth
-- of the write-back's cost (bench/README.md, "2026-12-01: the write-back's foreign
-- key"). Attempts are inserted only by the write-back, and only for the callback rows
-- that same statement updated, holding their row locks until it commits, so each
-- attempt's callback exists by construction. What the key still did is the cascade,
-- which this trigger does for every statement that deletes callbacks (retention, and
-- the cascade from a deleted batch): one index probe of attempt_callback_id_number_idx
-- per deleted callback.
ALTER TABLE "attempt" DROP CONSTRAINT "attempt_callback_id_fkey";

CREATE FUNCTION attempts_of_deleted_callbacks() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  -- = ANY(array): an index probe per callback whatever the planner thinks of old_rows.
  DELETE FROM attempt WHERE callback_id = ANY (ARRAY(SELECT o.id FROM old_rows o));
  RETURN NULL;
END $$;

CREATE TRIGGER callback_attempts_delete AFTER DELETE ON "callback"
  REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION attempts_of_deleted_callbacks();
