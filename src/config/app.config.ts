import { IsArray, IsIn, IsInt, IsNumber, IsOptional, IsString, Matches, Max, Min, MinLength, validateSync } from 'class-validator';
import { IsCidrList } from '../common/validators.js';

/** 32 bytes in standard base64 (43 characters and one `=`). */
const SECRETS_KEY_FORMAT = /^[A-Za-z0-9+/]{42}[AEIMQUYcgkosw048]=$/;

export type Role = 'all' | 'api' | 'worker';
export type LogLevel = 'error' | 'warn' | 'log' | 'debug' | 'verbose';

/**
 * Every setting of the service, validated once at boot. Nothing else reads
 * `process.env`: code receives this object through DI (`AppConfig` token).
 * Defaults live here, one line each with unit and meaning.
 */
export class AppConfig {
  /** PORT: TCP port of the HTTP API (3000; 0 picks a free port). */
  @IsInt() @Min(0) @Max(65535) port = 3000;
  /** HOST: address the API binds to (127.0.0.1). */
  @IsString() host = '127.0.0.1';
  /** DATABASE_URL: Postgres to use; unset starts an embedded one under DATA_DIR. */
  @IsOptional() @IsString() databaseUrl?: string;
  /** DATABASE_DIRECT_URL: a direct (session) connection to the same database, when DATABASE_URL is a transaction pooler such as PgBouncer: LISTEN, the maintenance lock and migrations use it (unset: DATABASE_URL is direct). */
  @IsOptional() @IsString() databaseDirectUrl?: string;
  /** DATABASE_READ_URL: a streaming replica of the same database for the API's reads that may be a moment old (lists, latency history, hosts, the portal's views); unset: every read goes to DATABASE_URL. */
  @IsOptional() @IsString() databaseReadUrl?: string;
  /** DATABASE_READ_MAX_LAG_MS: a replica further behind the primary than this is skipped until it catches up (2000). */
  @IsInt() @Min(100) @Max(600_000) databaseReadMaxLagMs = 2000;
  /** DATA_DIR: where the embedded Postgres keeps its files (./.data). */
  @IsString() dataDir = './.data';
  /** EMBEDDED_PG_PORT: port of the embedded Postgres (54329). */
  @IsInt() @Min(1) @Max(65535) embeddedPgPort = 54329;
  /** ROLE: api, worker, or all (all). */
  @IsIn(['all', 'api', 'worker']) role: Role = 'all';
  /** BOOTSTRAP_API_KEY: created as an admin key at start when no key exists yet. */
  @IsOptional() @IsString() @MinLength(16) bootstrapApiKey?: string;
  /** LOG_LEVEL: error, warn, log, debug, verbose (log). */
  @IsIn(['error', 'warn', 'log', 'debug', 'verbose']) logLevel: LogLevel = 'log';

  /** DISPATCH_CONCURRENCY: requests in flight per worker process (200). */
  @IsInt() @Min(1) @Max(20000) dispatchConcurrency = 200;
  /** HOST_MAX_IN_FLIGHT: requests in flight per destination scheme://host:port, across all workers (20). */
  @IsInt() @Min(1) @Max(10000) hostMaxInFlight = 20;
  /** HOST_BREAKER_FAILURES: timeouts/connection failures in a row that pause a host (5). */
  @IsInt() @Min(1) @Max(10000) hostBreakerFailures = 5;
  /** HOST_BREAKER_COOLDOWN_MS: how long a paused host waits before one probe call (30000 ms). */
  @IsInt() @Min(10) hostBreakerCooldownMs = 30_000;
  /** HOST_RECHECK_MS: when due callbacks wait only for busy, paused or rate-limited hosts, look again after this (50 ms), backing off while looks take nothing (nextRecheckMs). */
  @IsInt() @Min(1) @Max(10000) hostRecheckMs = 50;
  /** HOST_AFFINITY_MS: after a worker's claim took a host's last free slots, how long the other workers leave that host's freed slots to it (100 ms; 0: never), so workers at one host's cap do not hand its slots back and forth. */
  @IsInt() @Min(0) @Max(10000) hostAffinityMs = 100;
  /** DISPATCH_CLAIM_BATCH: most rows one claim statement takes (500); claims ramp up to it (claim.policy.ts). */
  @IsInt() @Min(1) @Max(10000) dispatchClaimBatch = 500;
  /** DISPATCH_LEASE_MARGIN_MS: lease = callback timeout + this margin (30000 ms). */
  @IsInt() @Min(1000) dispatchLeaseMarginMs = 30_000;
  /** DISPATCH_POLL_MS: heartbeat that looks for due work when no NOTIFY came (1000 ms). */
  @IsInt() @Min(10) dispatchPollMs = 1000;
  /** LEADER_LOCK_TIMEOUT_MS: a maintenance leader cut off from Postgres loses the lead this long after its last statement reached the server, and another worker takes it then (10000 ms). */
  @IsInt() @Min(1000) @Max(600_000) leaderLockTimeoutMs = 10_000;
  /** DATABASE_STATEMENT_TIMEOUT_MS: Postgres statement_timeout of the service's sessions (30000 ms; 0: none): a statement running longer is cancelled. */
  @IsInt() @Min(0) databaseStatementTimeoutMs = 30_000;
  /** DATABASE_LOCK_TIMEOUT_MS: Postgres lock_timeout of the service's sessions (5000 ms; 0: none): a statement waiting longer for a lock is cancelled. */
  @IsInt() @Min(0) databaseLockTimeoutMs = 5000;
  /** DISPATCH_SYNCHRONOUS_COMMIT: Postgres synchronous_commit of claims and write-backs, on or off (off: a database crash can only cause a resend). */
  @IsIn(['on', 'off']) dispatchSynchronousCommit: 'on' | 'off' = 'off';
  /** WRITEBACK_INTERVAL_MS: outcomes are written back at least this often (20 ms). */
  @IsInt() @Min(1) @Max(5000) writebackIntervalMs = 20;
  /** WRITEBACK_MAX_ROWS: a write-back is flushed early at this many outcomes (500). */
  @IsInt() @Min(1) @Max(10000) writebackMaxRows = 500;
  /** SHUTDOWN_GRACE_MS: on SIGTERM, how long in-flight calls may finish (10000 ms). */
  @IsInt() @Min(0) shutdownGraceMs = 10_000;
  /** SHUTDOWN_OVERRUN_MS: how long past SHUTDOWN_GRACE_MS a stop may take (writing back, with a database that may not answer) before the process exits anyway, with code 1 (10000 ms). */
  @IsInt() @Min(1000) shutdownOverrunMs = 10_000;

  /** HTTP_TIMEOUT_MS: default per-call timeout when a callback names none (15000 ms). */
  @IsInt() @Min(1) httpTimeoutMs = 15_000;
  /** HTTP_MAX_TIMEOUT_MS: largest timeoutMs a callback may ask for (120000 ms). */
  @IsInt() @Min(1) httpMaxTimeoutMs = 120_000;
  /** METRICS_TOKEN: /metrics needs `Authorization: Bearer <token>` (unset: /metrics is open while HOST is loopback and TRUSTED_PROXIES unset, else answers 403). */
  @IsOptional() @IsString() @MinLength(16) metricsToken?: string;
  /** SECRETS_KEY: 32 random bytes, base64 (`openssl rand -base64 32`): signing secrets are stored encrypted under it (AES-256-GCM). Required with DATABASE_URL; unset with the embedded Postgres, a key is made in DATA_DIR/secrets.key. */
  @IsOptional() @Matches(SECRETS_KEY_FORMAT, { message: 'must be 32 bytes, base64 (openssl rand -base64 32)' }) secretsKey?: string;
  /** SECRETS_KEY_PREVIOUS: comma-separated earlier SECRETS_KEYs, still read (never written) while `callbacks secrets rotate-key` re-encrypts under SECRETS_KEY (none). */
  @IsArray() @Matches(SECRETS_KEY_FORMAT, { each: true, message: 'each must be 32 bytes, base64 (openssl rand -base64 32)' }) secretsKeyPrevious: string[] = [];
  /** RECEIVER_TLS_POOLS_MAX: receivers with mutual TLS whose connection pools a process keeps at once (1000); past it the least recently used pool is closed. */
  @IsInt() @Min(1) @Max(100_000) receiverTlsPoolsMax = 1000;
  /** RESPONSE_SNIPPET_BYTES: bytes of each response body kept on the attempt (1024). */
  @IsInt() @Min(0) @Max(65536) responseSnippetBytes = 1024;
  /** ALLOW_PRIVATE_NETWORKS: comma-separated CIDRs that may be called though private (none). */
  @IsArray() @IsString({ each: true }) @IsCidrList() allowPrivateNetworks: string[] = [];
  /** PORTAL_FRAME_ANCESTORS: comma-separated origins (https://app.example.com) whose pages may frame the receiver portal (none: no site may). */
  @IsArray()
  @Matches(/^https?:\/\/[^/\s,;'"*]+$/, { each: true, message: 'each must be an origin: http(s)://host[:port], no path' })
  portalFrameAncestors: string[] = [];
  /** PORTAL_BASE_URL: this service's address as receivers reach it, for portal links (unset: http://HOST:PORT as it listens; with HOST=0.0.0.0 or ::, the local address the minting request reached; never the request's Host header). */
  @IsOptional() @Matches(/^https?:\/\/[^/\s]+$/, { message: 'must be http(s)://host[:port], no path' }) portalBaseUrl?: string;
  /** EGRESS_PROXY_URL: http:// or https:// forward proxy every callback goes through, as a CONNECT tunnel (unset: direct). */
  @IsOptional()
  @Matches(/^https?:\/\/([^/@\s]+@)?[^/@\s]+\/?$/, { message: 'must be http://[user:password@]host[:port] or https://…; socks5 is not supported' })
  egressProxyUrl?: string;

  /*
   * OpenTelemetry (tracing.setup.ts). These decide whether traces are exported, and
   * how; the SDK itself reads its other standard variables from the environment
   * (OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES, OTEL_TRACES_SAMPLER(_ARG),
   * OTEL_EXPORTER_OTLP_(TRACES_)HEADERS/TIMEOUT/COMPRESSION, OTEL_BSP_*): the one
   * place besides this module that reads process.env, by the SDK's design.
   */
  /** OTEL_SDK_DISABLED: true turns tracing off whatever else is set (false). */
  @IsIn(['true', 'false']) otelSdkDisabled: 'true' | 'false' = 'false';
  /** OTEL_TRACES_EXPORTER: otlp, console or none (unset: otlp when an OTLP endpoint is set, else tracing is off). */
  @IsOptional() @IsArray() @IsIn(['otlp', 'console', 'none'], { each: true }) otelTracesExporter?: string[];
  /** OTEL_EXPORTER_OTLP_ENDPOINT: OTLP/HTTP base URL; traces go to <it>/v1/traces (unset). */
  @IsOptional() @Matches(/^https?:\/\/\S+$/, { message: 'must be an http:// or https:// URL' }) otelExporterOtlpEndpoint?: string;
  /** OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: full URL for traces, used as is (unset). */
  @IsOptional() @Matches(/^https?:\/\/\S+$/, { message: 'must be an http:// or https:// URL' }) otelExporterOtlpTracesEndpoint?: string;
  /** OTEL_EXPORTER_OTLP_PROTOCOL: http/protobuf or http/json (http/protobuf); grpc is not supported. */
  @IsOptional()
  @IsIn(['http/protobuf', 'http/json'], { message: 'must be http/protobuf or http/json (grpc is not supported)' })
  otelExporterOtlpProtocol?: string;
  /** OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: overrides OTEL_EXPORTER_OTLP_PROTOCOL for traces. */
  @IsOptional()
  @IsIn(['http/protobuf', 'http/json'], { message: 'must be http/protobuf or http/json (grpc is not supported)' })
  otelExporterOtlpTracesProtocol?: string;

  /** DEFAULT_MAX_ATTEMPTS: attempts per callback unless the batch says otherwise (8). */
  @IsInt() @Min(1) @Max(100) defaultMaxAttempts = 8;
  /** RETRY_DELAYS_MS: delays before attempt 2, 3, …; the last repeats (Standard Webhooks). */
  @IsArray()
  @IsInt({ each: true })
  @Min(0, { each: true })
  retryDelaysMs = [5_000, 300_000, 1_800_000, 7_200_000, 18_000_000, 36_000_000, 36_000_000];
  /** RETRY_JITTER_PERMILLE: each delay is spread by ± this many thousandths (200 = ±20%). */
  @IsInt() @Min(0) @Max(1000) retryJitterPermille = 200;
  /** RETRY_AFTER_MAX_MS: cap on a receiver's Retry-After (3600000 ms). */
  @IsInt() @Min(0) retryAfterMaxMs = 3_600_000;

  /** RETENTION_HOURS: finished callbacks, their attempts and empty batches older than this are purged (720 h = 30 days; 0 = keep forever; fractions allowed, 0.05 = 3 min). */
  @IsNumber() @Min(0) retentionHours = 720;
  /** RETENTION_PURGE_BATCH: rows one purge statement deletes at most (1000). */
  @IsInt() @Min(1) @Max(100_000) retentionPurgeBatch = 1000;
  /** RETENTION_PURGE_PAUSE_MS: pause between two purge statements, so dispatch keeps the database (100 ms). */
  @IsInt() @Min(0) retentionPurgePauseMs = 100;
  /** RETENTION_PURGE_INTERVAL_MS: how often the leader looks for rows to purge (600000 ms = 10 min, or a tenth of RETENTION_HOURS when that is shorter, at least 1 s). */
  @IsInt() @Min(100) retentionPurgeIntervalMs = 600_000;

  /** RECEIVER_DISABLE_AFTER_HOURS: a receiver whose every attempt failed for this long is disabled, its callbacks held (120 h; 0 = never; fractions allowed). */
  @IsNumber() @Min(0) receiverDisableAfterHours = 120;
  /** RECEIVER_CHECK_INTERVAL_MS: how often the maintenance leader looks for receivers to disable (60000 ms). */
  @IsInt() @Min(100) receiverCheckIntervalMs = 60_000;

  /** TASK_INLINE_MS: how long the request that starts a task (a receiver disabled, enabled or deleted, a batch retried) runs its chunks before it answers; the rest goes on behind it (200 ms; 0: one chunk). */
  @IsInt() @Min(0) @Max(10_000) taskInlineMs = 200;
  /** TASK_RESUME_AFTER_MS: a running task no chunk moved for this long has lost its runner, and the maintenance leader resumes it (5000 ms). */
  @IsInt() @Min(100) taskResumeAfterMs = 5000;

  /** MAX_PENDING_PER_KEY: pending callbacks one API key may have stored; a batch past it is refused whole (1000000; 0 = no limit). */
  @IsInt() @Min(0) maxPendingPerKey = 1_000_000;
  /** MAX_PENDING_BYTES_PER_KEY: bytes of payload one API key's pending callbacks may hold, an event's payload counted once for all its deliveries; a batch or event past it is refused whole (1073741824: 1 GiB; 0 = no limit). */
  @IsInt() @Min(0) maxPendingBytesPerKey = 1_073_741_824;
  /** MAX_CALLBACKS_PER_BATCH: callbacks one batch may hold (10000). */
  @IsInt() @Min(1) @Max(100_000) maxCallbacksPerBatch = 10_000;
  /** EVENT_MAX_DELIVERIES: deliveries (callbacks) one published event may make; an event that would make more is refused whole, a 413 (10000). */
  @IsInt() @Min(1) @Max(1_000_000) eventMaxDeliveries = 10_000;
  /** EVENT_CHECK_BUDGET_MS: time one check of an event payload may take (compiling a type's schema, validating a payload, evaluating the subscribers' filters), in a thread of its own; past it the request is a 400 and stores nothing (1000 ms). */
  @IsInt() @Min(10) @Max(60_000) eventCheckBudgetMs = 1000;
  /** EVENT_CHECK_THREADS: most worker threads per API process that run those checks, off the event loop, made as checks need them; more checks wait in order (2). */
  @IsInt() @Min(1) @Max(64) eventCheckThreads = 2;
  /** MAX_CALLBACK_BODY_BYTES: body size of one callback (262144 bytes). */
  @IsInt() @Min(1) maxCallbackBodyBytes = 262_144;
  /** MAX_REQUEST_BYTES: size of one API request body (33554432 bytes). */
  @IsInt() @Min(1024) maxRequestBytes = 33_554_432;
  /** MAX_JSON_DEPTH: nesting depth of a callback body; the request may nest 4 more (32 levels). */
  @IsInt() @Min(1) @Max(1000) maxJsonDepth = 32;
  /** API_RATE_LIMIT_PER_SEC: API requests per second per key, refilled continuously (10000; 0 = no limit). */
  @IsInt() @Min(0) apiRateLimitPerSec = 10_000;
  /** API_RATE_LIMIT_BURST: requests a key may make at once above the rate (20000). */
  @IsInt() @Min(1) apiRateLimitBurst = 20_000;
  /** API_AUTH_FAILURES_PER_SEC: wrong keys accepted per second per client address before 429 (10; 0 = no limit). */
  @IsInt() @Min(0) apiAuthFailuresPerSec = 10;
  /** API_AUTH_FAILURES_BURST: wrong keys a client address may send at once (100). */
  @IsInt() @Min(1) apiAuthFailuresBurst = 100;
  /** TRANSFORM_TIMEOUT_MS: how long one run of a receiver's transform may take; past it the attempt fails as transform_error (50 ms). It runs on a thread of its own, so the budget bounds what one receiver's code costs the others' transforms, not the sending. */
  @IsInt() @Min(1) @Max(10_000) transformTimeoutMs = 50;
  /** TRANSFORM_MEMORY_MB: memory of one transform's sandbox; past it a run fails with out of memory (16 MiB, the engine's minimum). */
  @IsInt() @Min(16) @Max(1024) transformMemoryMb = 16;
  /** TRANSFORM_MAX_OUTPUT_BYTES: most a transform may return (the webhook as JSON); the body it returns is also held to MAX_CALLBACK_BODY_BYTES (524288 bytes). */
  @IsInt() @Min(1024) transformMaxOutputBytes = 524_288;
  /** TRANSFORM_THREADS: threads that run transforms in each process (1). */
  @IsInt() @Min(1) @Max(64) transformThreads = 1;
  /** TRANSFORM_CACHE_SIZE: compiled transforms each thread keeps, least recently used out first (100). */
  @IsInt() @Min(1) @Max(100_000) transformCacheSize = 100;
  /** TRUSTED_PROXIES: comma-separated CIDRs of reverse proxies whose X-Forwarded-For and X-Forwarded-Proto name the client and its scheme (none: the socket's address is the client). */
  @IsArray() @IsString({ each: true }) @IsCidrList() trustedProxies: string[] = [];
}

type Parser = (raw: string) => unknown;
const int: Parser = (raw) => (/^-?\d+$/.test(raw.trim()) ? Number(raw) : Number.NaN);
const num: Parser = (raw) => (/^\d+(\.\d+)?$/.test(raw.trim()) ? Number(raw) : Number.NaN);
const str: Parser = (raw) => raw;
const list: Parser = (raw) =>
  raw
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
const intList: Parser = (raw) => (list(raw) as string[]).map((s) => int(s));

/** Environment variable → config field and parser. */
const ENV: Record<string, [keyof AppConfig, Parser]> = {
  PORT: ['port', int],
  HOST: ['host', str],
  DATABASE_URL: ['databaseUrl', str],
  DATABASE_DIRECT_URL: ['databaseDirectUrl', str],
  DATABASE_READ_URL: ['databaseReadUrl', str],
  DATABASE_READ_MAX_LAG_MS: ['databaseReadMaxLagMs', int],
  DATA_DIR: ['dataDir', str],
  EMBEDDED_PG_PORT: ['embeddedPgPort', int],
  ROLE: ['role', str],
  BOOTSTRAP_API_KEY: ['bootstrapApiKey', str],
  LOG_LEVEL: ['logLevel', str],
  DISPATCH_CONCURRENCY: ['dispatchConcurrency', int],
  HOST_MAX_IN_FLIGHT: ['hostMaxInFlight', int],
  HOST_BREAKER_FAILURES: ['hostBreakerFailures', int],
  HOST_BREAKER_COOLDOWN_MS: ['hostBreakerCooldownMs', int],
  HOST_RECHECK_MS: ['hostRecheckMs', int],
  HOST_AFFINITY_MS: ['hostAffinityMs', int],
  DISPATCH_CLAIM_BATCH: ['dispatchClaimBatch', int],
  DISPATCH_LEASE_MARGIN_MS: ['dispatchLeaseMarginMs', int],
  DISPATCH_POLL_MS: ['dispatchPollMs', int],
  LEADER_LOCK_TIMEOUT_MS: ['leaderLockTimeoutMs', int],
  DISPATCH_SYNCHRONOUS_COMMIT: ['dispatchSynchronousCommit', str],
  DATABASE_STATEMENT_TIMEOUT_MS: ['databaseStatementTimeoutMs', int],
  DATABASE_LOCK_TIMEOUT_MS: ['databaseLockTimeoutMs', int],
  WRITEBACK_INTERVAL_MS: ['writebackIntervalMs', int],
  WRITEBACK_MAX_ROWS: ['writebackMaxRows', int],
  SHUTDOWN_GRACE_MS: ['shutdownGraceMs', int],
  SHUTDOWN_OVERRUN_MS: ['shutdownOverrunMs', int],
  HTTP_TIMEOUT_MS: ['httpTimeoutMs', int],
  HTTP_MAX_TIMEOUT_MS: ['httpMaxTimeoutMs', int],
  RESPONSE_SNIPPET_BYTES: ['responseSnippetBytes', int],
  RECEIVER_TLS_POOLS_MAX: ['receiverTlsPoolsMax', int],
  METRICS_TOKEN: ['metricsToken', str],
  SECRETS_KEY: ['secretsKey', (raw) => raw.trim()],
  SECRETS_KEY_PREVIOUS: ['secretsKeyPrevious', list],
  ALLOW_PRIVATE_NETWORKS: ['allowPrivateNetworks', list],
  EGRESS_PROXY_URL: ['egressProxyUrl', str],
  PORTAL_FRAME_ANCESTORS: ['portalFrameAncestors', list],
  PORTAL_BASE_URL: ['portalBaseUrl', str],
  OTEL_SDK_DISABLED: ['otelSdkDisabled', (raw) => raw.trim().toLowerCase()],
  OTEL_TRACES_EXPORTER: ['otelTracesExporter', (raw) => (list(raw) as string[]).map((s) => s.toLowerCase())],
  OTEL_EXPORTER_OTLP_ENDPOINT: ['otelExporterOtlpEndpoint', str],
  OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: ['otelExporterOtlpTracesEndpoint', str],
  OTEL_EXPORTER_OTLP_PROTOCOL: ['otelExporterOtlpProtocol', str],
  OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: ['otelExporterOtlpTracesProtocol', str],
  DEFAULT_MAX_ATTEMPTS: ['defaultMaxAttempts', int],
  RETRY_DELAYS_MS: ['retryDelaysMs', intList],
  RETRY_JITTER_PERMILLE: ['retryJitterPermille', int],
  RETRY_AFTER_MAX_MS: ['retryAfterMaxMs', int],
  RETENTION_HOURS: ['retentionHours', num],
  RETENTION_PURGE_BATCH: ['retentionPurgeBatch', int],
  RETENTION_PURGE_PAUSE_MS: ['retentionPurgePauseMs', int],
  RETENTION_PURGE_INTERVAL_MS: ['retentionPurgeIntervalMs', int],
  RECEIVER_DISABLE_AFTER_HOURS: ['receiverDisableAfterHours', num],
  RECEIVER_CHECK_INTERVAL_MS: ['receiverCheckIntervalMs', int],
  TASK_INLINE_MS: ['taskInlineMs', int],
  TASK_RESUME_AFTER_MS: ['taskResumeAfterMs', int],
  MAX_PENDING_PER_KEY: ['maxPendingPerKey', int],
  MAX_PENDING_BYTES_PER_KEY: ['maxPendingBytesPerKey', int],
  MAX_CALLBACKS_PER_BATCH: ['maxCallbacksPerBatch', int],
  EVENT_MAX_DELIVERIES: ['eventMaxDeliveries', int],
  EVENT_CHECK_BUDGET_MS: ['eventCheckBudgetMs', int],
  EVENT_CHECK_THREADS: ['eventCheckThreads', int],
  MAX_CALLBACK_BODY_BYTES: ['maxCallbackBodyBytes', int],
  MAX_REQUEST_BYTES: ['maxRequestBytes', int],
  MAX_JSON_DEPTH: ['maxJsonDepth', int],
  API_RATE_LIMIT_PER_SEC: ['apiRateLimitPerSec', int],
  API_RATE_LIMIT_BURST: ['apiRateLimitBurst', int],
  API_AUTH_FAILURES_PER_SEC: ['apiAuthFailuresPerSec', int],
  API_AUTH_FAILURES_BURST: ['apiAuthFailuresBurst', int],
  TRUSTED_PROXIES: ['trustedProxies', list],
  TRANSFORM_TIMEOUT_MS: ['transformTimeoutMs', int],
  TRANSFORM_MEMORY_MB: ['transformMemoryMb', int],
  TRANSFORM_MAX_OUTPUT_BYTES: ['transformMaxOutputBytes', int],
  TRANSFORM_THREADS: ['transformThreads', int],
  TRANSFORM_CACHE_SIZE: ['transformCacheSize', int],
};

/** Variables whose values an error never repeats (they are keys). */
const HIDDEN = new Set(['SECRETS_KEY', 'SECRETS_KEY_PREVIOUS', 'BOOTSTRAP_API_KEY', 'METRICS_TOKEN']);

export class ConfigError extends Error {}

/**
 * Builds the config from an environment (process.env at boot, a plain object in
 * tests) plus typed overrides, and throws one error listing every bad variable.
 */
export function loadConfig(env: Record<string, string | undefined>, overrides: Partial<AppConfig> = {}): AppConfig {
  const config = new AppConfig();
  const fieldToEnv = new Map<string, string>();
  for (const [name, [field, parse]] of Object.entries(ENV)) {
    fieldToEnv.set(field, name);
    const raw = env[name];
    if (raw !== undefined && raw !== '') (config as unknown as Record<string, unknown>)[field] = parse(raw);
  }
  Object.assign(config, overrides);
  // A short window is purged as often as it needs: stored history stays near the window, not the interval.
  if (!env.RETENTION_PURGE_INTERVAL_MS && overrides.retentionPurgeIntervalMs === undefined && config.retentionHours > 0) {
    config.retentionPurgeIntervalMs = Math.min(config.retentionPurgeIntervalMs, Math.max(1_000, Math.round(config.retentionHours * 360_000)));
  }
  const errors = validateSync(config, { forbidUnknownValues: true });
  if (errors.length > 0) {
    const lines = errors.map((e) => {
      const name = fieldToEnv.get(e.property) ?? e.property;
      const shown = HIDDEN.has(name) ? '(not shown)' : JSON.stringify(env[name] ?? e.value);
      return `  ${name}=${shown}: ${Object.values(e.constraints ?? {}).join('; ')}`;
    });
    throw new ConfigError(`Invalid configuration:\n${lines.join('\n')}`);
  }
  return config;
}
