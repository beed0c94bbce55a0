-- recordSuccesses, built in src/dispatch/sql/outcome.sql.ts; 26 parameters.
-- Rendered by `npm run sql:render` (test/unit/hot-statements.test.ts checks it is current).
WITH locked AS MATERIALIZED (
  SELECT r.id, r.last_success_at, r.failing_since, r.last_failure_at
  FROM receiver r
  JOIN unnest($1::uuid[], $2::float8[]) AS h(id, success_ms)
    ON r.id = h.id
  WHERE r.failing_since IS NOT NULL OR r.last_success_at IS NULL OR r.last_success_at <= to_timestamp(h.success_ms / 1000.0) - $3::int * interval '1 millisecond'
     OR r.last_failure_at > r.last_success_at
  ORDER BY r.id FOR NO KEY UPDATE OF r
),
o AS (
  SELECT * FROM unnest(
    $4::uuid[], $5::int[], $6::text[], $7::float8[],
    $8::float8[], $9::float8[], $10::float8[], $11::float8[],
    $12::float8[], $13::float8[], $14::float8[], $15::float8[],
    $16::int[], $17::text[], $18::text[],
    ARRAY(SELECT nullif(h.e, 'null'::jsonb) FROM jsonb_array_elements($19::jsonb) WITH ORDINALITY AS h(e, i) ORDER BY h.i),
    $20::text[],
    ARRAY(SELECT nullif(t.e, 'null'::jsonb) FROM jsonb_array_elements($21::jsonb) WITH ORDINALITY AS t(e, i) ORDER BY t.i),
    $22::text[], $23::float8[]
  ) AS o(callback_id, number, status, next_attempt_ms, completed_ms, started_ms,
         duration_ms, dns_ms, connect_ms, tls_ms, tunnel_ms, first_byte_ms, status_code, outcome, error,
         response_headers, response_body, transformed, auth, token_ms)
), moved AS (
  UPDATE callback c
  SET status = o.status, attempts = o.number,
      next_attempt_at = CASE WHEN o.next_attempt_ms IS NULL THEN c.next_attempt_at
                             ELSE (to_timestamp(o.next_attempt_ms / 1000.0) + CASE WHEN c.held THEN interval '1000 years' ELSE interval '0' END) END,
      completed_at = to_timestamp(o.completed_ms / 1000.0), done_at = COALESCE(to_timestamp(o.completed_ms / 1000.0), 'infinity'),
      last_status_code = o.status_code, last_error = o.error,
      lease_owner = NULL, lease_expires_at = NULL
  FROM o
  WHERE c.id = o.callback_id AND c.lease_owner = $24 AND c.done_at = 'infinity' AND (SELECT count(*) FROM locked) >= 0
  RETURNING c.id, c.api_key_id, c.host, c.receiver_id
),
attempts AS (
INSERT INTO attempt (callback_id, api_key_id, host, number, started_at, duration_ms, dns_ms, connect_ms,
                     tls_ms, tunnel_ms, first_byte_ms, status_code, outcome, error, response_headers, response_body, worker,
                     receiver_id, transformed, auth, token_ms)
SELECT o.callback_id, m.api_key_id, m.host, o.number, to_timestamp(o.started_ms / 1000.0), o.duration_ms, o.dns_ms, o.connect_ms,
       o.tls_ms, o.tunnel_ms, o.first_byte_ms, o.status_code, o.outcome, o.error, o.response_headers, o.response_body, $25,
       m.receiver_id, o.transformed, o.auth, o.token_ms
FROM o JOIN moved m ON m.id = o.callback_id
WHERE o.outcome IS NOT NULL RETURNING callback_id),

seen AS (
  SELECT m.receiver_id AS id, to_timestamp(o.started_ms / 1000.0) AS started, o.outcome = 'success' AS ok
  FROM moved m JOIN o ON o.callback_id = m.id WHERE m.receiver_id IS NOT NULL AND o.outcome IS NOT NULL
), here AS (
  SELECT s.id, s.success,
         min(seen.started) FILTER (WHERE NOT seen.ok AND (s.success IS NULL OR seen.started > s.success)) AS first_failure,
         max(seen.started) FILTER (WHERE NOT seen.ok AND (s.success IS NULL OR seen.started > s.success)) AS last_failure
  FROM (SELECT id, max(started) FILTER (WHERE ok) AS success FROM seen GROUP BY id) s JOIN seen ON seen.id = s.id
  GROUP BY s.id, s.success
), merged AS (
  SELECT l.id, l.last_success_at AS stored_success, l.failing_since AS stored_failing, l.last_failure_at AS stored_last_failure,
         x.success, x.last_failure, f.failing,
         f.failing IS NULL AND coalesce(l.last_success_at > x.success - $26::int * interval '1 millisecond', false) AS throttled
  FROM here h JOIN locked l ON l.id = h.id
  CROSS JOIN LATERAL (SELECT greatest(l.last_success_at, h.success) AS success, greatest(l.last_failure_at, h.last_failure) AS last_failure) x
  -- the earliest failure known after the latest success: the row's first, or its last (a success landing between them), or these attempts'
  CROSS JOIN LATERAL (
    SELECT min(t) AS failing FROM (VALUES (l.failing_since), (l.last_failure_at), (h.first_failure), (h.last_failure)) v(t)
    WHERE x.success IS NULL OR t > x.success
  ) f
), health AS (
  UPDATE receiver r
  SET last_success_at = CASE WHEN m.throttled THEN m.stored_success ELSE m.success END, failing_since = m.failing,
      last_failure_at = m.last_failure
  FROM merged m
  WHERE r.id = m.id
    AND (m.failing IS DISTINCT FROM m.stored_failing OR m.last_failure IS DISTINCT FROM m.stored_last_failure
         OR (m.success IS DISTINCT FROM m.stored_success AND NOT m.throttled))
  RETURNING r.id, r.api_key_id, r.name, r.deleted_at, r.failing_since, r.last_failure_at, r.last_success_at,
            m.stored_failing IS NULL AND m.failing IS NOT NULL AS started_failing
)
SELECT callback_id AS id FROM attempts;
