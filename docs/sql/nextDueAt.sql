-- nextDueAt, built in src/dispatch/sql/lease.sql.ts; 0 parameters.
-- Rendered by `npm run sql:render` (test/unit/hot-statements.test.ts checks it is current).
SELECT next_attempt_at AS at FROM callback_live WHERE status = 'pending' ORDER BY next_attempt_at LIMIT 1;
