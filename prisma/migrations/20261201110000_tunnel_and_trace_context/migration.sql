-- Through EGRESS_PROXY_URL an attempt that opened a connection spends time on the
-- CONNECT exchange with the proxy between its TCP connect (to the proxy) and its TLS
-- handshake (with the destination); NULL when sent directly or on a reused connection.
ALTER TABLE "attempt" ADD COLUMN "tunnel_ms" DOUBLE PRECISION;

-- The W3C trace context of the API request that accepted a callback (set only while
-- tracing is on), so its attempts, however much later, are spans in the caller's
-- trace. Nullable without a default: adding it rewrites no rows.
ALTER TABLE "callback" ADD COLUMN "traceparent" TEXT;
