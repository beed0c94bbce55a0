-- Per-destination limits shared by every worker process: one row per destination
-- (`scheme://host:port`, the same key as callback.host) with its limits, its
-- in-flight count, its rate-limit bucket and its circuit breaker; plus endpoints
-- (exact URLs) that answered 410 Gone.
--
-- `in_flight` is the number of callback rows of the host in status in_flight. It is
-- maintained by the statement-level triggers below, in the same transaction as the
-- status change, whichever statement makes it (claim, write-back, release, reaper,
-- cancel, purge), so it never drifts. The claim locks the host row (FOR UPDATE SKIP
-- LOCKED) and reads the latest committed count, which makes the cap exact across
-- worker processes.

CREATE TABLE "host" (
    "host" TEXT NOT NULL,
    -- NULL: HOST_MAX_IN_FLIGHT applies
    "max_in_flight" INTEGER,
    -- NULL: no rate limit
    "rate_per_sec" DOUBLE PRECISION,
    "in_flight" INTEGER NOT NULL DEFAULT 0,
    -- token bucket of the rate limit: tokens left at tokens_at (capacity max(1, rate_per_sec))
    "tokens" DOUBLE PRECISION NOT NULL DEFAULT 0,
    "tokens_at" TIMESTAMPTZ(3),
    "breaker_state" TEXT NOT NULL DEFAULT 'closed',
    "consecutive_failures" INTEGER NOT NULL DEFAULT 0,
    "opened_at" TIMESTAMPTZ(3),
    -- open: no call before this time; half_open: the probe's window
    "open_until" TIMESTAMPTZ(3),
    "limits_updated_at" TIMESTAMPTZ(3),
    "limits_updated_by" UUID,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    CONSTRAINT "host_pkey" PRIMARY KEY ("host"),
    CONSTRAINT "host_breaker_state_check" CHECK ("breaker_state" IN ('closed', 'open', 'half_open')),
    CONSTRAINT "host_in_flight_check" CHECK ("in_flight" >= 0)
);

CREATE TABLE "gone_endpoint" (
    "url" TEXT NOT NULL,
    "host" TEXT NOT NULL,
    -- the key whose callback got the 410 (it may see the URL in GET /v1/hosts)
    "api_key_id" UUID,
    "status_code" INTEGER NOT NULL,
    "gone_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    CONSTRAINT "gone_endpoint_pkey" PRIMARY KEY ("url")
);
CREATE INDEX "gone_endpoint_host_idx" ON "gone_endpoint"("host");

INSERT INTO "host" ("host", "in_flight")
SELECT "host", count(*) FILTER (WHERE "status" = 'in_flight') FROM "callback" GROUP BY "host";

-- Every destination gets its row when its first callback is stored, so the claim
-- can always lock it. DO NOTHING never waits on a row another claim has locked.
CREATE FUNCTION "host_rows_for_new_callbacks"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO host (host) SELECT DISTINCT n.host FROM new_rows n ORDER BY 1 ON CONFLICT (host) DO NOTHING;
  RETURN NULL;
END $$;

-- Applies the change in in-flight rows per host made by one statement. Host rows
-- are locked in name order first, so two statements touching the same hosts
-- cannot deadlock on them.
CREATE FUNCTION "host_in_flight_apply"(deltas JSONB) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  PERFORM 1 FROM host h WHERE h.host IN (SELECT jsonb_object_keys(deltas)) ORDER BY h.host FOR UPDATE;
  UPDATE host h SET in_flight = greatest(0, h.in_flight + (deltas ->> h.host)::int)
  WHERE h.host IN (SELECT jsonb_object_keys(deltas));
END $$;

CREATE FUNCTION "host_in_flight_after_update"() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE deltas JSONB;
BEGIN
  SELECT jsonb_object_agg(host, delta) INTO deltas FROM (
    SELECT host, sum(delta) AS delta FROM (
      SELECT o.host, -1 AS delta FROM old_rows o WHERE o.status = 'in_flight'
      UNION ALL
      SELECT n.host, 1 FROM new_rows n WHERE n.status = 'in_flight'
    ) x GROUP BY host HAVING sum(delta) <> 0
  ) d;
  IF deltas IS NOT NULL THEN PERFORM host_in_flight_apply(deltas); END IF;
  RETURN NULL;
END $$;

CREATE FUNCTION "host_in_flight_after_delete"() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE deltas JSONB;
BEGIN
  SELECT jsonb_object_agg(host, -n) INTO deltas FROM (
    SELECT o.host, count(*) AS n FROM old_rows o WHERE o.status = 'in_flight' GROUP BY o.host
  ) d;
  IF deltas IS NOT NULL THEN PERFORM host_in_flight_apply(deltas); END IF;
  RETURN NULL;
END $$;

CREATE TRIGGER "callback_host_rows" AFTER INSERT ON "callback"
  REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION "host_rows_for_new_callbacks"();
CREATE TRIGGER "callback_host_in_flight_update" AFTER UPDATE ON "callback"
  REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION "host_in_flight_after_update"();
CREATE TRIGGER "callback_host_in_flight_delete" AFTER DELETE ON "callback"
  REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION "host_in_flight_after_delete"();
