-- countPending, built in src/batches/pending.sql.ts; 4 parameters.
-- Rendered by `npm run sql:render` (test/unit/hot-statements.test.ts checks it is current).
SELECT (SELECT count(*)::int FROM (
          SELECT 1 FROM callback_live c
          WHERE c.status = 'pending'
            AND (c.api_key_id, c.priority) >= ($1::uuid, 0::smallint) AND (c.api_key_id, c.priority) <= ($2::uuid, 2::smallint)
          ORDER BY c.api_key_id, c.priority, c.next_attempt_at
          LIMIT $3::int
        ) x) AS n,
       (SELECT coalesce(sum(b.body_bytes), 0)::float8 FROM batch b WHERE b.api_key_id = $4::uuid AND b.completed_at IS NULL) AS bytes;
