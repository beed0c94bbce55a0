-- releaseClaims, built in src/dispatch/sql/outcome.sql.ts; 2 parameters.
-- Rendered by `npm run sql:render` (test/unit/hot-statements.test.ts checks it is current).
UPDATE callback SET status = 'pending', lease_owner = NULL, lease_expires_at = NULL
WHERE id = ANY($1::uuid[]) AND lease_owner = $2 AND done_at = 'infinity';
