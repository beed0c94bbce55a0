-- recordWithHealth, built in src/dispatch/sql/outcome.sql.ts; 26 parameters.
-- Rendered by `npm run sql:render` (test/unit/hot-statements.test.ts checks it is current).
  WITH
    locked AS MATERIALIZED (
      SELECT id, last_success_at, failing_since, last_failure_at
      FROM receiver WHERE id = ANY($1::uuid[]) ORDER BY id FOR NO KEY UPDATE
    ),

  o AS (
    SELECT * FROM unnest(
      $2::uuid[], $3::int[], $4::text[], $5::float8[],
      $6::float8[], $7::float8[], $8::float8[], $9::float8[],
      $10::float8[], $11::float8[], $12::float8[], $13::float8[],
      $14::int[], $15::text[], $16::text[],
      ARRAY(SELECT nullif(h.e, 'null'::jsonb) FROM jsonb_array_elements($17::jsonb) WITH ORDINALITY AS h(e, i) ORDER BY h.i),
      $18::text[],
      ARRAY(SELECT nullif(t.e, 'null'::jsonb) FROM jsonb_array_elements($19::jsonb) WITH ORDINALITY AS t(e, i) ORDER BY t.i),
      $20::text[], $21::float8[]
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
    WHERE c.id = o.callback_id AND c.lease_owner = $22 AND c.done_at = 'infinity' AND (SELECT count(*) FROM locked) >= 0
    RETURNING c.id, c.api_key_id, c.host, c.receiver_id , c.batch_id, c.external_id, c.url, c.attempts, c.last_status_code, c.last_error, c.completed_at, c.status
  ),
    attempts AS (
  INSERT INTO attempt (callback_id, api_key_id, host, number, started_at, duration_ms, dns_ms, connect_ms,
                       tls_ms, tunnel_ms, first_byte_ms, status_code, outcome, error, response_headers, response_body, worker,
                       receiver_id, transformed, auth, token_ms)
  SELECT o.callback_id, m.api_key_id, m.host, o.number, to_timestamp(o.started_ms / 1000.0), o.duration_ms, o.dns_ms, o.connect_ms,
         o.tls_ms, o.tunnel_ms, o.first_byte_ms, o.status_code, o.outcome, o.error, o.response_headers, o.response_body, $23,
         m.receiver_id, o.transformed, o.auth, o.token_ms
  FROM o JOIN moved m ON m.id = o.callback_id
  WHERE o.outcome IS NOT NULL),

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
           f.failing IS NULL AND coalesce(l.last_success_at > x.success - $24::int * interval '1 millisecond', false) AS throttled
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
  ),
  src AS MATERIALIZED (
SELECT c.api_key_id, 'callback.exhausted' AS type, 'callback.exhausted:' || c.id::text || ':' || c.attempts::text AS event_id,
       jsonb_build_object('callbackId', c.id, 'batchId', c.batch_id, 'externalId', c.external_id, 'url', c.url,
                          'receiver', CASE WHEN r.deleted_at IS NULL THEN r.name END, 'attempts', c.attempts,
                          'lastStatusCode', c.last_status_code, 'lastError', c.last_error, 'completedAt', to_char(c.completed_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')) AS payload,
       NULL::text AS notify_url, NULL::text AS notify_host, NULL::uuid AS notify_receiver_id
FROM moved c JOIN batch b ON b.id = c.batch_id LEFT JOIN receiver r ON r.id = c.receiver_id
WHERE true AND c.status = 'failed' AND NOT b.operator_event AND EXISTS (SELECT 1 FROM operator_endpoint oe WHERE oe.api_key_id = c.api_key_id) UNION ALL
SELECT r.api_key_id, 'receiver.failing' AS type, 'receiver.failing:' || r.id::text || ':' || (floor(extract(epoch FROM r.failing_since) * 1000)::bigint)::text AS event_id,
       jsonb_build_object('receiver', r.name, 'failingSince', to_char(r.failing_since AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'), 'lastFailureAt', to_char(r.last_failure_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
                          'lastSuccessAt', to_char(r.last_success_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')) AS payload,
       NULL::text AS notify_url, NULL::text AS notify_host, NULL::uuid AS notify_receiver_id
FROM health r
WHERE r.started_failing AND r.failing_since IS NOT NULL AND r.deleted_at IS NULL
  AND NOT EXISTS (SELECT 1 FROM operator_endpoint oe WHERE oe.receiver_id = r.id) AND EXISTS (SELECT 1 FROM operator_endpoint oe WHERE oe.api_key_id = r.api_key_id)),
  rr AS MATERIALIZED (

    SELECT * FROM (
    SELECT r.id, r.url, r.headers, r.timeout_ms, r.max_attempts, r.retry_delays_ms, r.disabled
    FROM receiver r
    WHERE r.id IN (SELECT oe.receiver_id FROM src s JOIN operator_endpoint oe ON oe.api_key_id = s.api_key_id
                   UNION SELECT s.notify_receiver_id FROM src s WHERE s.notify_receiver_id IS NOT NULL)
      AND r.deleted_at IS NULL AND r.id NOT IN (SELECT id FROM locked) FOR KEY SHARE) l
    UNION ALL
    SELECT r.id, r.url, r.headers, r.timeout_ms, r.max_attempts, r.retry_delays_ms, r.disabled
    FROM receiver r
    WHERE r.id IN (SELECT oe.receiver_id FROM src s JOIN operator_endpoint oe ON oe.api_key_id = s.api_key_id
                   UNION SELECT s.notify_receiver_id FROM src s WHERE s.notify_receiver_id IS NOT NULL)
      AND r.deleted_at IS NULL AND r.id IN (SELECT id FROM locked)
  ), t AS MATERIALIZED (
    SELECT s.api_key_id, s.event_id, r.id AS receiver_id, r.url, oe.host, r.headers, r.timeout_ms, r.max_attempts,
           r.retry_delays_ms, r.disabled
    FROM src s JOIN operator_endpoint oe ON oe.api_key_id = s.api_key_id JOIN rr r ON r.id = oe.receiver_id
    WHERE (oe.event_types IS NULL OR s.type = ANY(oe.event_types)) AND r.url IS NOT NULL
    UNION ALL
    SELECT s.api_key_id, s.event_id, r.id, s.notify_url, s.notify_host, COALESCE(r.headers, '{}'), r.timeout_ms, r.max_attempts,
           r.retry_delays_ms, COALESCE(r.disabled, false)
    FROM src s LEFT JOIN rr r ON r.id = s.notify_receiver_id
    -- a notify receiver deleted since the batch was stored: nothing to send it
    WHERE s.notify_url IS NOT NULL AND (s.notify_receiver_id IS NULL OR r.id IS NOT NULL)
  ), ev AS MATERIALIZED (
    SELECT s.api_key_id, s.type, s.event_id, s.payload, operator_uuidv7() AS id, operator_uuidv7() AS batch_id,
           (SELECT count(*)::int FROM t WHERE t.api_key_id = s.api_key_id AND t.event_id = s.event_id) AS deliveries
    FROM src s
  ), e AS (
    INSERT INTO event (id, api_key_id, event_id, type, payload, request_hash, batch_id, deliveries)
    SELECT id, api_key_id, event_id, type, payload, 'operator', batch_id, deliveries FROM ev WHERE deliveries > 0
    ON CONFLICT (api_key_id, event_id) DO NOTHING
    RETURNING id, api_key_id, event_id, type, payload, batch_id, created_at
  ), eb AS (
    INSERT INTO batch (id, api_key_id, label, total, operator_event)
    SELECT e.batch_id, e.api_key_id, 'operator ' || e.type, ev.deliveries, true FROM e JOIN ev ON ev.id = e.id
    RETURNING id
  ), ec AS (
    INSERT INTO callback (id, batch_id, api_key_id, url, host, method, headers, body, timeout_ms, max_attempts, retry_delays_ms,
                          status, next_attempt_at, priority, receiver_id, held)
    SELECT operator_uuidv7(), e.batch_id, e.api_key_id, t.url, t.host, 'POST',
           t.headers || jsonb_build_object('content-type', 'application/json', 'webhook-event-id', e.event_id, 'webhook-event-type', e.type),
           jsonb_build_object('id', e.event_id, 'type', e.type, 'timestamp', to_char(e.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'), 'data', e.payload)::text,
           COALESCE(t.timeout_ms, $25::int), COALESCE(t.max_attempts, $26::int), t.retry_delays_ms,
           'pending', (now() + CASE WHEN t.disabled THEN interval '1000 years' ELSE interval '0' END), 0, t.receiver_id, t.disabled
    FROM e JOIN t ON t.api_key_id = e.api_key_id AND t.event_id = e.event_id
    RETURNING id
  )
  SELECT id FROM moved;
