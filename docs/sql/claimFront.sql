-- claimFront, built in src/dispatch/sql/claim.sql.ts; 22 parameters.
-- Rendered by `npm run sql:render` (test/unit/hot-statements.test.ts checks it is current).
  WITH RECURSIVE limits AS MATERIALIZED (
    SELECT h.host, h.rate_per_sec, h.breaker_state,
  CASE WHEN h.rate_per_sec IS NULL THEN NULL
       ELSE least(greatest(1, h.rate_per_sec),
                  h.tokens + h.rate_per_sec * extract(epoch FROM now() - coalesce(h.tokens_at, now())))
  END AS tokens,
  CASE WHEN h.breaker_state = 'closed' THEN coalesce(h.max_in_flight, $1::int) - h.in_flight
       WHEN h.open_until <= now() AND h.in_flight = 0 THEN 1
       ELSE 0
  END AS slots
    FROM host h WHERE (h.in_flight > 0 OR h.breaker_state <> 'closed' OR h.rate_per_sec IS NOT NULL)
  ), key_pauses AS MATERIALIZED (
    SELECT k.host, k.api_key_id, k.open_until <= now() AS probe FROM host_key_breaker k WHERE k.state <> 'closed'
  ),
probe AS (
  (SELECT p.host, 1 AS n FROM (
SELECT c.host FROM callback_live c
WHERE c.status = 'pending' AND c.host > '' AND c.next_attempt_at <= now()
ORDER BY c.host, c.next_attempt_at LIMIT 1) p)
  UNION ALL
  SELECT (
SELECT c.host FROM callback_live c
WHERE c.status = 'pending' AND c.host > p.host AND c.next_attempt_at <= now()
ORDER BY c.host, c.next_attempt_at LIMIT 1), p.n + 1 FROM probe p WHERE p.host IS NOT NULL AND p.n <= $2
), kept AS MATERIALIZED (
    SELECT h.host FROM probe p JOIN host h ON h.host = p.host
    WHERE $3::boolean AND h.claimed_by <> $4 AND h.claimed_until > now() AND h.breaker_state = 'closed'
  ), blocked AS MATERIALIZED (
    SELECT host FROM limits WHERE slots < 1 OR tokens < 1
    UNION ALL
    SELECT host FROM kept
  ),
shut AS MATERIALIZED (
  SELECT count(p.host) <= $5
         AND coalesce(bool_and(p.host IS NULL OR p.host = ANY($6::text[]) OR p.host IN (SELECT host FROM blocked)), true) AS shut
  FROM probe p
),
  keys AS (
    (SELECT c.api_key_id AS id FROM callback_live c WHERE c.status = 'pending' ORDER BY c.api_key_id LIMIT 1)
    UNION ALL
    SELECT (SELECT c.api_key_id FROM callback_live c WHERE c.status = 'pending' AND c.api_key_id > k.id
            ORDER BY c.api_key_id LIMIT 1)
    FROM keys k WHERE k.id IS NOT NULL
  ), shares AS MATERIALIZED (
    SELECT k.id, a.weight::float8 / sum(a.weight) OVER () AS share
    FROM keys k JOIN api_key a ON a.id = k.id
    WHERE NOT (SELECT shut FROM shut) AND k.id IS NOT NULL
      AND EXISTS (SELECT 1 FROM (VALUES (0), (1), (2)) p(p), LATERAL (
            SELECT 1 FROM callback_live c WHERE
  c.status = 'pending'
  AND (c.api_key_id, c.priority, c.next_attempt_at) > (k.id, p.p::smallint, '-infinity'::timestamptz)
  AND (c.api_key_id, c.priority, c.next_attempt_at) <= (k.id, p.p::smallint, now()) ORDER BY c.api_key_id, c.priority, c.next_attempt_at LIMIT 1) d)
  ), cand AS MATERIALIZED (
    SELECT x.id, x.api_key_id, x.host, x.url, x.receiver_id, x.status, s.share,
           row_number() OVER (PARTITION BY x.api_key_id, x.priority ORDER BY x.next_attempt_at) * (CASE x.priority WHEN 0 THEN 1 WHEN 1 THEN 10 ELSE 100 END) AS place,
           x.priority, x.next_attempt_at
    FROM shares s
    CROSS JOIN (VALUES (0), (1), (2)) p(p)
    CROSS JOIN LATERAL (
      -- Eligible rows in the index's order; each locked by primary key as it comes,
      -- so SKIP LOCKED passes over those a concurrent claim holds and takes the next.
      SELECT l.* FROM (
        SELECT r.id FROM (
          SELECT c.id, c.api_key_id, c.host, c.ordering_key FROM callback_live c
          WHERE
  c.status = 'pending'
  AND (c.api_key_id, c.priority, c.next_attempt_at) > (s.id, p.p::smallint, '-infinity'::timestamptz)
  AND (c.api_key_id, c.priority, c.next_attempt_at) <= (s.id, p.p::smallint, now()) AND NOT c.held
          ORDER BY c.api_key_id, c.priority, c.next_attempt_at LIMIT $7
        ) r
        WHERE
r.host <> ALL($8::text[]) AND r.host NOT IN (SELECT host FROM blocked)
AND (r.host, r.api_key_id) NOT IN (SELECT host, api_key_id FROM key_pauses WHERE NOT probe)
AND (r.ordering_key IS NULL OR NOT EXISTS (
  SELECT 1 FROM callback_live o
  WHERE o.api_key_id = r.api_key_id AND o.ordering_key = r.ordering_key
    AND o.status IN ('pending', 'in_flight') AND o.id < r.id))
        LIMIT least($9, $10::int * $11)
      ) e
      CROSS JOIN LATERAL (
        -- By primary key only: naming the status here (or anywhere the planner can
        -- push it down to) let it, with the queue's statistics always stale, read
        -- callback_due_idx for each row (20,000 entries a lookup). The status of the
        -- row as locked is checked in the ranked step.
        SELECT c.id, c.api_key_id, c.host, c.url, c.receiver_id, c.priority, c.next_attempt_at, c.status FROM callback_live c
        WHERE c.id = e.id
        FOR UPDATE OF c SKIP LOCKED
      ) l
      LIMIT $12
    ) x
  ), ranked AS MATERIALIZED (
    SELECT id, api_key_id, host, url, receiver_id, row_number() OVER (PARTITION BY api_key_id ORDER BY place, priority, next_attempt_at) / share AS ord
    FROM cand WHERE status = 'pending' -- claimed and committed by another worker meanwhile: not ours
  ), due AS MATERIALIZED (
    SELECT id, api_key_id, host, url, receiver_id, ord FROM ranked ORDER BY ord LIMIT $13
  ), hosts AS MATERIALIZED (
    -- One host row after the other in name order, each locked by primary key. (As
    -- host IN (...) ORDER BY host FOR UPDATE, a plan without a sort, which the
    -- claim's settings prefer (CLAIM_PLANNER), walked all of host_pkey: 14 s with a million hosts.)
    SELECT h.host, h.rate_per_sec, h.breaker_state,
  CASE WHEN h.rate_per_sec IS NULL THEN NULL
       ELSE least(greatest(1, h.rate_per_sec),
                  h.tokens + h.rate_per_sec * extract(epoch FROM now() - coalesce(h.tokens_at, now())))
  END AS tokens,
  CASE WHEN h.breaker_state = 'closed' THEN coalesce(h.max_in_flight, $14::int) - h.in_flight
       WHEN h.open_until <= now() AND h.in_flight = 0 THEN 1
       ELSE 0
  END AS slots
    FROM unnest(ARRAY(SELECT DISTINCT host FROM due ORDER BY host)) AS d(host)
    CROSS JOIN LATERAL (SELECT * FROM host h WHERE h.host = d.host FOR UPDATE) h
  ), probes AS MATERIALIZED (
    SELECT DISTINCT ON (d.host, d.api_key_id) d.id
    FROM due d JOIN key_pauses k ON k.host = d.host AND k.api_key_id = d.api_key_id AND k.probe
    ORDER BY d.host, d.api_key_id, d.ord
  ), pick AS MATERIALIZED (
    SELECT r.id, r.host, r.public_only, EXISTS (SELECT 1 FROM gone_endpoint g WHERE g.api_key_id = r.api_key_id AND g.url = r.url) AS gone
    FROM (
      SELECT d.id, d.api_key_id, d.host, d.url, coalesce(rv.public_only, false) AS public_only,
             row_number() OVER (PARTITION BY d.host ORDER BY d.ord) AS rn
      FROM due d
      -- its receiver, a primary-key probe per row of a receiver: one disabled or deleted whose task
      -- has not yet held this row is left out; a destination a portal session chose goes public only
      LEFT JOIN LATERAL (
        SELECT rv.disabled, d.host = ANY(rv.portal_hosts) AS public_only FROM receiver rv WHERE rv.id = d.receiver_id
      ) rv ON true
      WHERE NOT coalesce(rv.disabled, false)
        -- of a key probing the host, its probe alone
        AND ((d.host, d.api_key_id) NOT IN (SELECT host, api_key_id FROM key_pauses) OR d.id IN (SELECT id FROM probes))
    ) r
    JOIN hosts h ON h.host = r.host
    WHERE r.rn <= least(h.slots, coalesce(floor(h.tokens), h.slots))
  ), moved AS (
    UPDATE callback c
    SET status = 'in_flight', lease_owner = $15,
        lease_expires_at = now() + (c.timeout_ms + $16::int) * interval '1 millisecond'
    FROM pick p
    WHERE c.id = p.id AND c.done_at = 'infinity' AND NOT p.gone
    RETURNING c.id, c.batch_id, c.api_key_id, c.url, c.host, c.method, c.headers, c.body, c.timeout_ms,
              c.max_attempts, c.retry_delays_ms, c.attempts, c.priority, c.traceparent, c.receiver_id, p.public_only, c.body_event_id
  ), granted AS MATERIALIZED (
    SELECT k.id FROM api_key k WHERE k.allow_private_networks AND k.id IN (SELECT api_key_id FROM moved)
  ), spent AS (
    UPDATE host h
    SET tokens = CASE WHEN hs.tokens IS NULL THEN h.tokens ELSE hs.tokens - m.n END,
        tokens_at = CASE WHEN hs.tokens IS NULL THEN h.tokens_at ELSE now() END,
        breaker_state = CASE WHEN hs.breaker_state = 'closed' THEN 'closed' ELSE 'half_open' END,
        open_until = CASE WHEN hs.breaker_state = 'closed' THEN h.open_until
                          ELSE now() + $17::int * interval '1 millisecond' END,
        -- the mark only when this claim took every free slot and sends all it took at once: see the comment above
        claimed_by = CASE WHEN m.n >= hs.slots AND m.all_sent THEN $18 ELSE h.claimed_by END,
        claimed_until = CASE WHEN m.n >= hs.slots AND m.all_sent THEN now() + $19::int * interval '1 millisecond' ELSE h.claimed_until END
    FROM (SELECT host, count(*) AS n, sum(count(*)) OVER () <= $20::int AS all_sent FROM moved GROUP BY host) m
    JOIN hosts hs ON hs.host = m.host
    WHERE h.host = m.host
  ), probe_rows AS MATERIALIZED (
    -- the probes leased (none unless a key's pause is over): the update below then touches nothing
    SELECT m.host, m.api_key_id, m.timeout_ms FROM moved m WHERE m.id IN (SELECT id FROM probes)
  ), probed AS (
    UPDATE host_key_breaker k
    SET state = 'half_open', updated_at = now(),
        open_until = now() + greatest($21::int, m.timeout_ms + $22::int) * interval '1 millisecond'
    FROM probe_rows m
    WHERE k.host = m.host AND k.api_key_id = m.api_key_id
  )
  SELECT id, batch_id AS "batchId", api_key_id AS "apiKeyId", url, host, method, headers, body,
         timeout_ms AS "timeoutMs", max_attempts AS "maxAttempts", retry_delays_ms AS "retryDelaysMs", attempts, priority, traceparent,
         receiver_id AS "receiverId", NOT public_only AND api_key_id IN (SELECT id FROM granted) AS "privateNetworks",
         body_event_id AS "bodyEventId", false AS gone
  FROM moved
  UNION ALL
  -- rows to a gone URL, untouched: failGoneEndpoints fails them (the rest of the columns null)
  SELECT id, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, true FROM pick WHERE gone
  UNION ALL
  -- the body of each event whose deliveries were claimed, once: a primary-key probe of event per event (id null)
  SELECT NULL, NULL, NULL, NULL, NULL, NULL, NULL, e.body, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, e.id, false
  FROM (SELECT DISTINCT body_event_id AS id FROM moved WHERE body_event_id IS NOT NULL) d
  CROSS JOIN LATERAL (SELECT e.id, e.body FROM event e WHERE e.id = d.id) e;
