/**
 * How far apart the service's clocks may be: Postgres's (`now()`: a row's
 * `created_at`), a worker's (an attempt's `started_at`, a finished callback's
 * `done_at`) and the API's (a UUIDv7 id, made when a request is accepted). A read
 * bounded by a time of one clock on a column of another takes this much more.
 */
export const CLOCK_MARGIN_MS = 3_600_000;
