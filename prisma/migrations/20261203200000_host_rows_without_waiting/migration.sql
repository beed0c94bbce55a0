-- A destination's row is inserted only when no version of it is visible. INSERT … ON
-- CONFLICT DO NOTHING alone checks the unique index with a dirty snapshot, and so waits
-- for any transaction updating an existing host row (a claim or a write-back changing
-- its in_flight) to end: every insert of callbacks waited on the claims and write-backs
-- of its hosts, and a statement that had locked one host row and then inserted
-- callbacks of another (a write-back storing its operator events) closed a cycle with
-- a claim locking the same two in name order (deadlock detected, ~1 s each). The
-- probe reads the statement's snapshot and waits for nothing; ON CONFLICT still settles
-- two first inserts of one new host.
CREATE OR REPLACE FUNCTION "host_rows_for_new_callbacks"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO host (host)
  SELECT DISTINCT n.host FROM new_rows n WHERE NOT EXISTS (SELECT 1 FROM host h WHERE h.host = n.host) ORDER BY 1
  ON CONFLICT (host) DO NOTHING;
  RETURN NULL;
END $$;
