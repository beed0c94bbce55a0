-- The in-flight triggers lock the host rows of a statement in name order. Written as
-- host IN (SELECT …) ORDER BY host FOR UPDATE, the lock needed a sort, and the
-- worker's sessions (enable_sort = off, see src/database/dispatch-database.ts) chose
-- to walk all of host_pkey instead: 364 ms per claim with a million hosts. As
-- host = ANY(array) the primary key scan itself gives the name order.
CREATE OR REPLACE FUNCTION "host_in_flight_apply"(deltas JSONB) RETURNS void LANGUAGE plpgsql AS $$
DECLARE hosts TEXT[] := ARRAY(SELECT jsonb_object_keys(deltas));
BEGIN
  PERFORM 1 FROM host h WHERE h.host = ANY(hosts) ORDER BY h.host FOR UPDATE;
  UPDATE host h SET in_flight = greatest(0, h.in_flight + (deltas ->> h.host)::int)
  WHERE h.host = ANY(hosts);
END $$;
