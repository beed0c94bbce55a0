import { STATUS } from '../model/states.js';
import { QUEUE } from '../queue/queue.sql.js';
import { Prisma } from '../generated/prisma/client.js';

/**
 * A key's pending callbacks, counted up to `atMost`, so a count reads at most that many
 * index entries (PendingQuota): one range of `callback_key_due_idx (api_key_id, priority,
 * next_attempt_at) WHERE status = 'pending'`, in that index's order, run with
 * COUNT_PLANNER. With the queue's statistics always stale ("nothing is pending"), the
 * planner would otherwise walk `callback_due_idx` through every key's pending rows
 * (test/db/plans.test.ts checks the plan). And the key's pending payload bytes: the
 * `body_bytes` of its open batches (an event's payload counts once, stored once for all
 * its deliveries), one range of `batch_key_open_idx (api_key_id) INCLUDE (body_bytes)
 * WHERE completed_at IS NULL`. A batch counts all its bodies until its last callback
 * finishes.
 */
export const countPending = (apiKeyId: string, atMost: number) => Prisma.sql`
  SELECT (SELECT count(*)::int FROM (
            SELECT 1 FROM ${QUEUE} c
            WHERE c.status = ${STATUS.pending}
              AND (c.api_key_id, c.priority) >= (${apiKeyId}::uuid, 0::smallint) AND (c.api_key_id, c.priority) <= (${apiKeyId}::uuid, 2::smallint)
            ORDER BY c.api_key_id, c.priority, c.next_attempt_at
            LIMIT ${atMost}::int
          ) x) AS n,
         (SELECT coalesce(sum(b.body_bytes), 0)::float8 FROM batch b WHERE b.api_key_id = ${apiKeyId}::uuid AND b.completed_at IS NULL) AS bytes`;

/**
 * countPending's own transaction: its order only from the index (no sort, no bitmap
 * scan, as the claim's CLAIM_PLANNER), and no JIT: near a quota of a million the
 * estimated cost passes `jit_above_cost`, and compiling would cost more than the count.
 */
export const COUNT_PLANNER = { enable_sort: 'off', enable_bitmapscan: 'off', jit: 'off' } as const;
