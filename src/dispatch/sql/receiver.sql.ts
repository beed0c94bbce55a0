import { Prisma } from '../../generated/prisma/client.js';
import { disabledColumns } from '../../receivers/receiver-hold.sql.js';

/**
 * Disables the receivers whose failed attempts span `hours` without a success
 * between them (`last_failure_at - failing_since`, kept by the write-back:
 * recordReceiverHealth), with `reason`. Reads `receiver_failing_idx` (failing,
 * still enabled receivers only); locks the rows it disables. Their callbacks are held
 * next, in the same transaction (holdReceiverCallbacks).
 */
export const disableFailingReceivers = (hours: number, reason: string) => Prisma.sql`
  UPDATE receiver SET ${disabledColumns(true, reason)} updated_at = now()
  WHERE failing_since IS NOT NULL AND NOT disabled
    AND last_failure_at - failing_since >= ${hours}::float8 * interval '1 hour'
  RETURNING id, api_key_id AS "apiKeyId", name, failing_since AS "failingSince"`;
