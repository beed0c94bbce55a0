import { Prisma } from '../generated/prisma/client.js';

/** A subscribed receiver as the publish needs it: what a delivery's row is made from, and its filter. */
export interface SubscriberRow {
  id: string;
  apiKeyId: string;
  name: string;
  url: string;
  headers: unknown;
  timeoutMs: number | null;
  maxAttempts: number | null;
  retryDelaysMs: number[];
  disabled: boolean;
  eventFilter: Record<string, unknown> | null;
  /** Its subscriptions (the preview names the one that matched). */
  eventTypes: string[];
}

/** A no-op bound inside each pattern's index walk: a LIMIT keeps the walk a subquery of its own (never flattened into a join the planner may turn into a scan). */
const MAX_SUBSCRIBERS = 1_000_000;

/**
 * The key's receivers subscribed to any of `patterns` (patternsOf: the type and its
 * `prefix.*` wildcards), optionally only those named in `names`; not deleted, with a url;
 * disabled ones too (their deliveries are stored held). Reads, locks nothing (the
 * deliveries' insert reads the receivers again FOR SHARE). The plan comes from the shape,
 * not from statistics (one key's thousands of `order.paid` entries make the planner
 * expect as many for every key): per pattern, a walk of event_subscription_pkey
 * (api_key_id, pattern) in receiver_id order under a LIMIT; the ids go as one array to
 * receiver_pkey (`id = ANY(ARRAY(…))`: one probe per subscriber, never a scan of the
 * key's other receivers), so a receiver two patterns match comes once
 * (test/db/event-subscribers.plans.test.ts).
 */
export function subscribersOf(apiKeyId: string, patterns: string[], names?: string[]): Prisma.Sql {
  return Prisma.sql`
    SELECT id, api_key_id AS "apiKeyId", name, url, headers, timeout_ms AS "timeoutMs", max_attempts AS "maxAttempts",
           COALESCE(retry_delays_ms, '{}') AS "retryDelaysMs", disabled, event_filter AS "eventFilter", event_types AS "eventTypes"
    FROM receiver
    WHERE id = ANY(ARRAY(
        SELECT s.receiver_id FROM unnest(${patterns}::text[]) AS p(pattern)
        CROSS JOIN LATERAL (
          SELECT receiver_id FROM event_subscription
          WHERE api_key_id = ${apiKeyId}::uuid AND pattern = p.pattern
          ORDER BY receiver_id LIMIT ${MAX_SUBSCRIBERS}
        ) s))
      AND deleted_at IS NULL AND url IS NOT NULL
      ${names ? Prisma.sql`AND name = ANY(${names}::text[])` : Prisma.empty}
    ORDER BY id`;
}
