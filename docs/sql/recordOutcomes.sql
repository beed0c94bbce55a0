-- recordOutcomes, built in src/dispatch/sql/outcome.sql.ts; 22 parameters.
-- Rendered by `npm run sql:render` (test/unit/hot-statements.test.ts checks it is current).
WITH
    o AS (
      SELECT * FROM unnest(
        $1::uuid[], $2::int[], $3::text[], $4::float8[],
        $5::float8[], $6::float8[], $7::float8[], $8::float8[],
        $9::float8[], $10::float8[], $11::float8[], $12::float8[],
        $13::int[], $14::text[], $15::text[],
        ARRAY(SELECT nullif(h.e, 'null'::jsonb) FROM jsonb_array_elements($16::jsonb) WITH ORDINALITY AS h(e, i) ORDER BY h.i),
        $17::text[],
        ARRAY(SELECT nullif(t.e, 'null'::jsonb) FROM jsonb_array_elements($18::jsonb) WITH ORDINALITY AS t(e, i) ORDER BY t.i),
        $19::text[], $20::float8[]
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
      WHERE c.id = o.callback_id AND c.lease_owner = $21 AND c.done_at = 'infinity'
      RETURNING c.id, c.api_key_id, c.host, c.receiver_id
    ), attempts AS (
    INSERT INTO attempt (callback_id, api_key_id, host, number, started_at, duration_ms, dns_ms, connect_ms,
                         tls_ms, tunnel_ms, first_byte_ms, status_code, outcome, error, response_headers, response_body, worker,
                         receiver_id, transformed, auth, token_ms)
    SELECT o.callback_id, m.api_key_id, m.host, o.number, to_timestamp(o.started_ms / 1000.0), o.duration_ms, o.dns_ms, o.connect_ms,
           o.tls_ms, o.tunnel_ms, o.first_byte_ms, o.status_code, o.outcome, o.error, o.response_headers, o.response_body, $22,
           m.receiver_id, o.transformed, o.auth, o.token_ms
    FROM o JOIN moved m ON m.id = o.callback_id
    WHERE o.outcome IS NOT NULL) SELECT id FROM moved;
