import { Prisma } from '../../generated/prisma/client.js';
import { disabledColumns } from '../../queue/receiver-hold.sql.js';

/**
 * Disables the receivers whose failed attempts span `hours` without a success
 * between them (`last_failure_at - failing_since`, kept by the write-back:
 * healthMerge in outcome.sql.ts), with `reason`. Reads `receiver_failing_idx` (failing,
 * still enabled receivers only); locks the rows it disables `FOR UPDATE`, as the API
 * does before a flip, so operator events reading the receiver `FOR KEY SHARE`
 * (withOperatorEvents) wait for it (a bare UPDATE takes only `FOR NO KEY UPDATE`).
 * Their callbacks are held next, by a `receiver.disable` task started in the same
 * transaction (MaintenanceRepository.disableFailingReceivers; its chunks: reconcileHeldChunk).
 */
export const disableFailingReceivers = (hours: number, reason: string) => Prisma.sql`
  WITH due AS MATERIALIZED (
    SELECT id FROM receiver
    WHERE failing_since IS NOT NULL AND NOT disabled
      AND last_failure_at - failing_since >= ${hours}::float8 * interval '1 hour'
    FOR UPDATE
  )
  UPDATE receiver r SET ${disabledColumns(true, reason)} updated_at = now()
  FROM due WHERE r.id = due.id AND NOT r.disabled
  RETURNING r.id, r.api_key_id AS "apiKeyId", r.name, r.failing_since AS "failingSince"`;
