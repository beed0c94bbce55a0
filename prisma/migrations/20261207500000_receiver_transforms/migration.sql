-- Transformations (src/transforms): a receiver's own JavaScript reshapes each request
-- before it is sent, and an attempt it reshaped keeps the request as sent.
-- - receiver.transform_code: the handler's source; NULL: none, its callbacks go as stored.
-- - attempt.transformed: {method, url, headers, body} as its receiver's transform made them
--   and as they went out (headers with the signature); NULL on every other attempt, so an
--   attempt of a callback sent as stored costs nothing more.
-- Nullable, no default: adding them rewrites nothing (attempt's partitions take the
-- column from their parent).
ALTER TABLE "receiver" ADD COLUMN "transform_code" TEXT;
ALTER TABLE "attempt" ADD COLUMN "transformed" JSONB;
