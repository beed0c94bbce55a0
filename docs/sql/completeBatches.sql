-- completeBatches, built in src/queue/batch-completion.sql.ts; 7 parameters.
-- Rendered by `npm run sql:render` (test/unit/hot-statements.test.ts checks it is current).
  WITH
    done AS (
      UPDATE batch b
      -- a batch with no callbacks left at all (purged) is complete now: without the coalesce it stayed open, swept again and again
      SET completed_at = coalesce((SELECT max(c.completed_at) FROM callback c
                                   WHERE c.batch_id = b.id AND c.done_at >= (b.created_at - $1::int * interval '1 millisecond')), now())
      WHERE b.id = ANY($2::uuid[]) AND b.completed_at IS NULL
        -- unfinished rows are the queue's alone (done_at 'infinity'): its partition only
        AND NOT EXISTS (SELECT 1 FROM callback c WHERE c.batch_id = b.id AND c.status IN ('pending', 'in_flight') AND c.done_at = 'infinity')
      RETURNING b.id, b.api_key_id, b.label, b.total, b.created_at, b.completed_at, b.notify_url, b.notify_host,
                b.notify_receiver_id, b.operator_event
    ), told AS MATERIALIZED (
      SELECT * FROM done d
      WHERE NOT d.operator_event
        AND (d.notify_url IS NOT NULL OR EXISTS (SELECT 1 FROM operator_endpoint oe WHERE oe.api_key_id = d.api_key_id))
    ),
  src AS MATERIALIZED (
    SELECT d.api_key_id, 'batch.completed' AS type, 'batch.completed:' || d.id::text AS event_id,
           jsonb_build_object('batchId', d.id, 'label', d.label, 'total', d.total, 'counts', n.counts, 'createdAt', to_char(d.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
                              'completedAt', to_char(d.completed_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
                              'makespanMs', round(extract(epoch FROM s.last_end - s.first_start) * 1000)) AS payload,
           d.notify_url, d.notify_host, d.notify_receiver_id
    FROM told d
    CROSS JOIN LATERAL (
      SELECT jsonb_build_object('pending'::text, count(*) FILTER (WHERE c.status = 'pending'),
                                'in_flight'::text, count(*) FILTER (WHERE c.status = 'in_flight'),
                                'succeeded'::text, count(*) FILTER (WHERE c.status = 'succeeded'),
                                'failed'::text, count(*) FILTER (WHERE c.status = 'failed'),
                                'cancelled'::text, count(*) FILTER (WHERE c.status = 'cancelled')) AS counts
      FROM callback c WHERE c.batch_id = d.id AND c.done_at >= (d.created_at - $3::int * interval '1 millisecond')) n
    -- as GET /v1/batches/{id} reads it: first attempt start to last attempt end
    CROSS JOIN LATERAL (
SELECT min(x.first_start) AS first_start, max(x.last_end) AS last_end
FROM callback c
CROSS JOIN LATERAL (
  SELECT min(a.started_at) AS first_start, max(a.started_at + a.duration_ms * interval '1 millisecond') AS last_end
  FROM attempt a WHERE a.callback_id = c.id AND a.started_at >= (d.created_at - $4::int * interval '1 millisecond')
) x
WHERE c.batch_id = d.id AND c.done_at >= (d.created_at - $5::int * interval '1 millisecond') AND c.attempts > 0) s),
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
           COALESCE(t.timeout_ms, $6::int), COALESCE(t.max_attempts, $7::int), t.retry_delays_ms,
           'pending', (now() + CASE WHEN t.disabled THEN interval '1000 years' ELSE interval '0' END), 0, t.receiver_id, t.disabled
    FROM e JOIN t ON t.api_key_id = e.api_key_id AND t.event_id = e.event_id
    RETURNING id
  )
  SELECT id, completed_at AS "completedAt" FROM done;
