import { Prisma } from '../generated/prisma/client.js';

/**
 * The queue: `callback_live`, the partition of `callback` that holds every unfinished
 * row (`done_at = 'infinity'`; ARCHITECTURE.md, "History layout"). Statements that
 * only read unfinished rows (the claim's walks, the lease reaper's, the quota count)
 * read it by name, so their plans never list the history's partitions. Statements
 * that change rows go through `callback` with `done_at = 'infinity'`: its statement
 * triggers keep the host accounting, and a row that finishes moves out of the queue.
 */
export const QUEUE = Prisma.raw('callback_live');
