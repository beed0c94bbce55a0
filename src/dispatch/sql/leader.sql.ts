import { Prisma } from '../../generated/prisma/client.js';

/**
 * The maintenance leader's lock: a session-level advisory lock, held by one
 * dedicated connection of one worker. Postgres drops it when that session ends (the
 * process died, or its connection broke), and the next worker to try takes it. The
 * key is an arbitrary constant of this service ("callback maintenance").
 */
const MAINTENANCE_LOCK_KEY = 0x6362_6d74; // 'cbmt'

/** Takes the lock if free; true when this session holds it (again). Never waits. */
export const tryLeaderLock = () => Prisma.sql`SELECT pg_try_advisory_lock(${MAINTENANCE_LOCK_KEY}::bigint) AS held`;

/** Gives the lock up (at shutdown, so another worker leads at once). */
export const leaderUnlock = () => Prisma.sql`SELECT pg_advisory_unlock(${MAINTENANCE_LOCK_KEY}::bigint) AS released`;

/**
 * Whether this session holds the lock (a bigint advisory key shows in pg_locks as
 * classid = its high 32 bits, objid = its low 32 bits, objsubid = 1). The leader's
 * confirmation, before each maintenance task and as its heartbeat.
 */
export const holdsLeaderLock = () => Prisma.sql`
  SELECT EXISTS (
    SELECT 1 FROM pg_locks
    WHERE locktype = 'advisory' AND pid = pg_backend_pid() AND granted AND objsubid = 1
      AND classid = (${MAINTENANCE_LOCK_KEY}::bigint >> 32)::oid AND objid = (${MAINTENANCE_LOCK_KEY}::bigint & 4294967295)::oid
  ) AS held`;

/**
 * The lock's session settings: Postgres ends it after `idleMs` without a statement
 * (`idle_session_timeout`, Postgres 14+), which frees the lock of a leader cut off
 * from the database; named, so it is told apart in pg_stat_activity.
 */
export const lockSessionSettings = (idleMs: number) => `SET idle_session_timeout = ${Math.trunc(idleMs)}; SET application_name = 'callbacks maintenance lock'`;
