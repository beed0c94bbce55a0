-- latency_rollup: one closed bucket of one key's latency history (GET /v1/history/latency
-- without a host, batch or receiver filter), as the live aggregate over its attempts
-- computed it: count, successes, exact p50/p90/p99 and max. Percentiles do not merge, so
-- each bucket width has its own rows. The read that first needs a closed bucket computes
-- it and stores it (src/history/latency.repository.ts), so a month of hourly buckets is
-- read from 720 rows instead of sorting a month of attempts. In a bucket without
-- attempts, pct is empty and max null.
CREATE TABLE "latency_rollup" (
    "api_key_id" UUID NOT NULL,
    "bucket_ms" INTEGER NOT NULL,
    "start" TIMESTAMPTZ(3) NOT NULL,
    "count" INTEGER NOT NULL,
    "ok" INTEGER NOT NULL,
    "pct" DOUBLE PRECISION[] NOT NULL,
    "max" DOUBLE PRECISION,
    "computed_at" TIMESTAMPTZ(3) NOT NULL DEFAULT now(),
    CONSTRAINT "latency_rollup_pkey" PRIMARY KEY ("api_key_id", "bucket_ms", "start"),
    CONSTRAINT "latency_rollup_api_key_id_fkey" FOREIGN KEY ("api_key_id") REFERENCES "api_key"("id") ON DELETE CASCADE ON UPDATE CASCADE
);

-- Retention deletes rollups by start, across keys, with the attempts' partitions.
CREATE INDEX "latency_rollup_start_idx" ON "latency_rollup"("start");

-- A bucket is closed, and may be stored, once it ended before this: an attempt is
-- written when its call ends, and calls last HTTP_MAX_TIMEOUT_MS at most (120 s by
-- default). The read's definition; the trigger below spells it out.
CREATE FUNCTION "latency_rollup_closed_before"() RETURNS timestamptz LANGUAGE sql STABLE
AS $$ SELECT now() - interval '10 minutes' $$;

-- An attempt that started before that (a call longer than 10 minutes, a worker that was
-- cut off from the database, rows written by hand) deletes the stored buckets it falls
-- in, so a stored bucket is always what the live aggregate would say. A row trigger
-- whose WHEN is evaluated in the insert itself: the write-back's attempts, all recent,
-- call no function.
CREATE FUNCTION "latency_rollups_of_late_attempt"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  DELETE FROM latency_rollup r
  WHERE r.api_key_id = NEW.api_key_id AND r.start <= NEW.started_at AND r.start > NEW.started_at - interval '1 day'
    AND r.start + r.bucket_ms * interval '1 millisecond' > NEW.started_at;
  RETURN NULL;
END $$;

CREATE TRIGGER "attempt_late_rollups" AFTER INSERT ON "attempt"
FOR EACH ROW WHEN (NEW.started_at < now() - interval '10 minutes') -- latency_rollup_closed_before(), spelled out: no function call per row
EXECUTE FUNCTION latency_rollups_of_late_attempt();
