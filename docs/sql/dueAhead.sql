-- dueAhead, built in src/dispatch/sql/claim.sql.ts; 4 parameters.
-- Rendered by `npm run sql:render` (test/unit/hot-statements.test.ts checks it is current).
SELECT d.host, d.priority FROM unnest($1::uuid[]) AS k(id)
CROSS JOIN generate_series(0, $2::int - 1) AS p(p)
CROSS JOIN LATERAL (
  SELECT r.host, r.priority FROM (
    SELECT c.host, c.priority FROM callback_live c
    WHERE c.status = 'pending' AND NOT c.held
      AND (c.api_key_id, c.priority, c.next_attempt_at) > (k.id, p.p::smallint, '-infinity'::timestamptz)
      AND (c.api_key_id, c.priority, c.next_attempt_at) <= (k.id, p.p::smallint, now())
    ORDER BY c.api_key_id, c.priority, c.next_attempt_at LIMIT $3
  ) r
  WHERE r.host = ANY($4::text[])
) d;
