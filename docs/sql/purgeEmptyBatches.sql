-- purgeEmptyBatches, built in src/retention/retention.sql.ts; 3 parameters.
-- Rendered by `npm run sql:render` (test/unit/hot-statements.test.ts checks it is current).
WITH doomed AS (
  SELECT b.id FROM batch b
  WHERE b.completed_at < $1
    AND (SELECT true FROM callback c WHERE c.batch_id = b.id AND c.done_at >= (b.created_at - $2::int * interval '1 millisecond') ORDER BY c.status LIMIT 1) IS NULL
  ORDER BY b.completed_at
  LIMIT $3
  FOR UPDATE SKIP LOCKED
)
DELETE FROM batch b USING doomed WHERE b.id = doomed.id;
