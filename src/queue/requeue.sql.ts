import { STATUS } from '../model/states.js';
import { Prisma } from '../generated/prisma/client.js';
import { dueAt, receiverDisabled } from './receiver-hold.sql.js';

/**
 * The columns a failed or cancelled callback gets when it is sent again: pending, due
 * now, one more attempt allowed past those it used, held while its receiver is
 * disabled (and then due HELD_SHIFT later, receiver-hold.sql.ts). Its id, and so its
 * `webhook-id`, stays, as do its attempts so far. The one definition for
 * `POST /v1/callbacks/:id/retry`, a batch retry's chunks and a recovery's chunks
 * (an `UPDATE callback SET …` of each); the batches of the rows it sends again are
 * re-opened by the same statement or transaction (reopenBatches).
 */
export const REQUEUE_COLUMNS = Prisma.sql`
  status = ${STATUS.pending}, next_attempt_at = ${dueAt(Prisma.sql`now()`, receiverDisabled)}, completed_at = NULL, done_at = 'infinity',
  max_attempts = GREATEST(max_attempts, attempts + 1), held = ${receiverDisabled}`;
