-- openBatchesWithNothingLeft, built in src/queue/batch-completion.sql.ts; 1 parameters.
-- Rendered by `npm run sql:render` (test/unit/hot-statements.test.ts checks it is current).
SELECT b.id FROM batch b
WHERE b.completed_at IS NULL
  AND (SELECT true FROM callback c WHERE c.batch_id = b.id AND c.status BETWEEN 'in_flight' AND 'pending' AND c.done_at = 'infinity' ORDER BY c.status LIMIT 1) IS NULL
ORDER BY b.created_at
LIMIT $1;
