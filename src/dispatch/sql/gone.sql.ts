import { STATUS } from '../../model/states.js';
import { QUEUE } from '../../queue/queue.sql.js';
import { Prisma } from '../../generated/prisma/client.js';
import { exhaustedSource } from '../../queue/operator-causes.sql.js';
import { withOperatorEvents, type OperatorEventDefaults } from '../../queue/operator-event.sql.js';

/** `last_error` of a callback failed without a call because its URL answered 410 Gone to its key before. */
export const ENDPOINT_GONE = 'endpoint_gone: this URL answered 410 Gone; not called again';

/**
 * Fails for good, without a call, the pending callbacks of `ids` whose URL answered 410
 * Gone to their key (`gone_endpoint`), with their callback.exhausted operator events in
 * the same statement. The claim's `pick` hands such rows back named, which keeps the
 * operator-event machinery out of the hottest statement's plan; a killed worker leaves
 * them pending for a later claim. Of two claims that met a row, the second's statement
 * waits for the first's row lock, then no longer matches (`done_at` is not
 * `'infinity'`); the event's id (`callback.exhausted:<id>:<attempts>`) would refuse a
 * second event anyway. Locks the rows `FOR UPDATE` in id order, through callback_live's
 * primary key. Returns the rows failed and their batches, whose completion the caller
 * stamps after the commit (batch-completion.sql.ts).
 */
export const failGoneEndpoints = (ids: string[], d: OperatorEventDefaults) =>
  withOperatorEvents(
    Prisma.sql`
      x AS MATERIALIZED (
        SELECT c.id FROM ${QUEUE} c
        WHERE c.id = ANY(${ids}::uuid[]) AND c.status = ${STATUS.pending}
          AND EXISTS (SELECT 1 FROM gone_endpoint g WHERE g.api_key_id = c.api_key_id AND g.url = c.url)
        ORDER BY c.id
        FOR UPDATE OF c
      ), failed AS (
        UPDATE callback c
        SET status = ${STATUS.failed}, completed_at = now(), done_at = now(), last_error = ${ENDPOINT_GONE},
            lease_owner = NULL, lease_expires_at = NULL
        FROM x WHERE c.id = x.id AND c.done_at = 'infinity' AND c.status = ${STATUS.pending}
        RETURNING c.id, c.api_key_id, c.batch_id, c.external_id, c.url, c.receiver_id, c.attempts, c.last_status_code, c.last_error,
                  c.completed_at, c.status
      ),`,
    exhaustedSource(Prisma.sql`failed`, Prisma.sql`true`),
    d,
    Prisma.sql`SELECT id, batch_id AS "batchId" FROM failed`,
  );
