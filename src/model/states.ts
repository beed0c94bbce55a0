import { AppError } from '../common/app.error.js';
import { Prisma } from '../generated/prisma/client.js';

/**
 * Every state name the service stores, in one place, for the TypeScript and the SQL
 * alike. The migrations' CHECK constraints list the same names; the schema test
 * (test/db/schema.test.ts) fails when they drift apart. Callback states:
 *
 *   pending ──claim──▶ in_flight ──2xx──────────────▶ succeeded
 *      ▲                  │ ├──retryable, attempts left─▶ pending (next_attempt_at later)
 *      │                  │ └──permanent or exhausted───▶ failed
 *      └──lease expired / released at shutdown
 *   pending | in_flight ──cancel──▶ cancelled;   failed | cancelled ──retry──▶ pending
 */
export const CALLBACK_STATUSES = ['pending', 'in_flight', 'succeeded', 'failed', 'cancelled'] as const;
export type CallbackStatus = (typeof CALLBACK_STATUSES)[number];

/**
 * What one attempt came to. `transform_error`: its receiver's transform failed (src/transforms), so nothing
 * was sent; `auth_error`: no OAuth2 token could be had for the call (its token endpoint failed), so nothing was sent.
 */
export const OUTCOMES = [
  'success',
  'http_error',
  'timeout',
  'connect_error',
  'dns_error',
  'tls_error',
  'network_error',
  'blocked',
  'transform_error',
  'auth_error',
] as const;
export type Outcome = (typeof OUTCOMES)[number];

/** A destination's circuit breaker (breaker.policy.ts draws the transitions). */
export const BREAKER_STATES = ['closed', 'open', 'half_open'] as const;
export type BreakerStateName = (typeof BREAKER_STATES)[number];

/** A callback's priority within its key, stored as its index here (0 high), so "high first" is ascending order. */
export const PRIORITIES = ['high', 'normal', 'low'] as const;
export type Priority = (typeof PRIORITIES)[number];
export const priorityRank = (p: Priority): number => PRIORITIES.indexOf(p);

/** Work on many callbacks at once (src/tasks), and where a task stands. */
export const TASK_KINDS = ['receiver.disable', 'receiver.enable', 'receiver.delete', 'batch.retry', 'recovery'] as const;
export type TaskKind = (typeof TASK_KINDS)[number];
/** cancelled: a recovery stopped by POST /v1/recoveries/{id}/cancel. */
export const TASK_STATUSES = ['running', 'finished', 'superseded', 'cancelled'] as const;
export type TaskStatus = (typeof TASK_STATUSES)[number];

/** What a recovery can send again. */
export const RECOVERABLE = ['failed', 'cancelled'] as const satisfies readonly CallbackStatus[];
export type Recoverable = (typeof RECOVERABLE)[number];
/** Where a recovery stands (its task's status, as users see it). */
export const RECOVERY_STATES = ['running', 'done', 'cancelled'] as const;
export type RecoveryState = (typeof RECOVERY_STATES)[number];

type Literals<T extends string> = { readonly [K in T]: Prisma.Sql };

/**
 * The names as SQL literals (`'pending'`), for statements. Literals, not bound
 * parameters: a partial index (`WHERE status = 'pending'`) serves a statement only
 * when the planner can prove its predicate from the statement's own text, which a
 * prepared statement's generic plan cannot do with `status = $1`.
 */
function literals<T extends string>(names: readonly T[]): Literals<T> {
  return Object.fromEntries(names.map((n) => [n, Prisma.raw(`'${n}'`)])) as Literals<T>;
}

export const STATUS = literals(CALLBACK_STATUSES);
export const OUTCOME = literals(OUTCOMES);
export const BREAKER = literals(BREAKER_STATES);
export const TASK_STATUS = literals(TASK_STATUSES);

/** Statuses of a callback with nothing left to do (`callback_finished_idx` lists the same). */
export const FINISHED = Prisma.sql`(${STATUS.succeeded}, ${STATUS.failed}, ${STATUS.cancelled})`;
/** Statuses of a callback still to be sent or being sent. */
export const UNFINISHED = Prisma.sql`(${STATUS.pending}, ${STATUS.in_flight})`;
/**
 * The same two as a range (`status ${UNFINISHED_RANGE}`): no other status sorts between
 * in_flight and pending, whatever the collation (the five begin with different letters:
 * c, f, i, p, s). A range on an index's second column keeps the index's order, which an
 * IN list does not before PostgreSQL 17, so a probe `ORDER BY status LIMIT 1` reads one
 * index entry on every supported server instead of sorting all its matches.
 */
export const UNFINISHED_RANGE = Prisma.sql`BETWEEN ${STATUS.in_flight} AND ${STATUS.pending}`;

/** Optional `?status=`: one of the callback states. */
export function statusParam(raw: string | undefined, allowed: readonly CallbackStatus[] = CALLBACK_STATUSES): CallbackStatus | undefined {
  if (raw === undefined || raw === '') return undefined;
  if (!(allowed as readonly string[]).includes(raw)) throw new AppError('validation_failed', `status must be one of ${allowed.join(', ')}`);
  return raw as CallbackStatus;
}
