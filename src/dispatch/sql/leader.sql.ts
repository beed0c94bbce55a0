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
