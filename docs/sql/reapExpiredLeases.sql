-- reapExpiredLeases, built in src/dispatch/sql/lease.sql.ts; 4 parameters.
-- Rendered by `npm run sql:render` (test/unit/hot-statements.test.ts checks it is current).
  WITH
    x AS MATERIALIZED (
      SELECT id FROM callback_live WHERE status = 'in_flight' AND lease_expires_at < now()
      ORDER BY lease_expires_at LIMIT $1
      FOR UPDATE
    ), reaped AS (
      UPDATE callback c
      SET attempts = c.attempts + 1,
          status = CASE WHEN c.attempts + 1 >= c.max_attempts THEN 'failed' ELSE 'pending' END,
          completed_at = CASE WHEN c.attempts + 1 >= c.max_attempts THEN now() ELSE NULL END,
          done_at = CASE WHEN c.attempts + 1 >= c.max_attempts THEN now() ELSE 'infinity' END,
          last_status_code = NULL, last_error = $2,
          lease_owner = NULL, lease_expires_at = NULL,
          next_attempt_at = CASE WHEN c.attempts + 1 >= c.max_attempts THEN c.next_attempt_at ELSE (now() + CASE WHEN c.held THEN interval '1000 years' ELSE interval '0' END) END
      FROM x WHERE c.id = x.id AND c.done_at = 'infinity'
      RETURNING c.id, c.api_key_id, c.batch_id, c.external_id, c.url, c.receiver_id, c.attempts, c.last_status_code, c.last_error,
                c.completed_at, c.status
    ),
  src AS MATERIALIZED (
SELECT c.api_key_id, 'callback.exhausted' AS type, 'callback.exhausted:' || c.id::text || ':' || c.attempts::text AS event_id,
       jsonb_build_object('callbackId', c.id, 'batchId', c.batch_id, 'externalId', c.external_id, 'url', c.url,
                          'receiver', CASE WHEN r.deleted_at IS NULL THEN r.name END, 'attempts', c.attempts,
                          'lastStatusCode', c.last_status_code, 'lastError', c.last_error, 'completedAt', to_char(c.completed_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')) AS payload,
       NULL::text AS notify_url, NULL::text AS notify_host, NULL::uuid AS notify_receiver_id
FROM reaped c JOIN batch b ON b.id = c.batch_id LEFT JOIN receiver r ON r.id = c.receiver_id
WHERE true AND c.status = 'failed' AND NOT b.operator_event AND EXISTS (SELECT 1 FROM operator_endpoint oe WHERE oe.api_key_id = c.api_key_id)),
  rr AS MATERIALIZED (

    SELECT r.id, r.url, r.headers, r.timeout_ms, r.max_attempts, r.retry_delays_ms, r.disabled
    FROM receiver r
    WHERE r.id IN (SELECT oe.receiver_id FROM src s JOIN operator_endpoint oe ON oe.api_key_id = s.api_key_id
                   UNION SELECT s.notify_receiver_id FROM src s WHERE s.notify_receiver_id IS NOT NULL)
      AND r.deleted_at IS NULL FOR KEY SHARE
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
           COALESCE(t.timeout_ms, $3::int), COALESCE(t.max_attempts, $4::int), t.retry_delays_ms,
           'pending', (now() + CASE WHEN t.disabled THEN interval '1000 years' ELSE interval '0' END), 0, t.receiver_id, t.disabled
    FROM e JOIN t ON t.api_key_id = e.api_key_id AND t.event_id = e.event_id
    RETURNING id
  )
  SELECT id, status = 'failed' AS failed FROM reaped;
