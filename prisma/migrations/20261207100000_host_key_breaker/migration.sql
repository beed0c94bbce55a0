-- A key's own circuit breaker at one destination, for the failures that depend on the
-- call rather than on the host (timeouts, broken connections): one key's calls with a
-- 1 ms timeout, or to a path of the host that hangs, pause that key's calls to the
-- host, not every key's. Connection and DNS failures stay on the host row's breaker,
-- shared by all keys (breaker.policy.ts says which outcome goes where, and why).
-- A row exists only while its breaker is not clean (open, half-open, or closed with
-- failures counted); a report that closes it with no failures deletes it, and the
-- maintenance leader deletes rows left unused, so the claim, which reads the rows not
-- closed on every run, reads a handful.
CREATE TABLE "host_key_breaker" (
  "host" TEXT NOT NULL,
  "api_key_id" UUID NOT NULL,
  "state" TEXT NOT NULL DEFAULT 'closed',
  "failures" INTEGER NOT NULL DEFAULT 0,
  "opened_at" TIMESTAMPTZ(3),
  "open_until" TIMESTAMPTZ(3),
  "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
  CONSTRAINT "host_key_breaker_pkey" PRIMARY KEY ("host", "api_key_id"),
  CONSTRAINT "host_key_breaker_state_check" CHECK ("state" IN ('closed', 'open', 'half_open')),
  CONSTRAINT "host_key_breaker_api_key_id_fkey" FOREIGN KEY ("api_key_id") REFERENCES "api_key"("id") ON DELETE CASCADE ON UPDATE CASCADE
);
