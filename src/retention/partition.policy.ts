/**
 * Which time partitions of the history (ARCHITECTURE.md, "History layout") to make and
 * which to drop: plain decisions on epoch milliseconds, table-tested.
 */

/** The partitioned history tables and the column each is partitioned by. */
export const HISTORY_TABLES = [
  { table: 'callback', key: 'done_at' },
  { table: 'attempt', key: 'started_at' },
] as const;

const DAY_MS = 86_400_000;
/** The narrowest partition: a window of seconds keeps up to this much more. */
const MIN_WIDTH_MS = 10_000;
/** Partitions are made at least this far ahead of now, and at least two widths. */
const AHEAD_MS = 2 * 60_000;

/** One partition's bounds: `from` null is MINVALUE; `to` null is MAXVALUE (the queue's `'infinity'` partition). */
export interface PartitionBounds {
  name: string;
  from: number | null;
  to: number | null;
}

/**
 * A tenth of the retention window in whole seconds (at least 10 s), so stored history is
 * at most the window and one width; a day when history is kept forever.
 */
export function partitionWidthMs(retentionHours: number): number {
  if (retentionHours <= 0) return DAY_MS;
  return Math.max(MIN_WIDTH_MS, Math.round((retentionHours * 3_600_000) / 10 / 1_000) * 1_000);
}

/** How far ahead of now partitions are made: two widths, at least two minutes. Made again twice as often. */
export function partitionsAheadMs(width: number): number {
  return Math.max(AHEAD_MS, 2 * width);
}

/**
 * The partitions to make so that every instant from a width ago to `partitionsAheadMs`
 * ahead has one: the slots of the width's grid (from epoch) in that range, less what
 * existing partitions cover (the migration's `attempt_before` ends mid-slot; a clock
 * that jumped leaves gaps). The queue's partition (from 'infinity') covers no instant.
 */
export function partitionsToMake(existing: PartitionBounds[], now: number, width: number): Array<{ from: number; to: number }> {
  const covered = existing
    .filter((p) => p.from === null || Number.isFinite(p.from))
    .map((p) => ({ from: p.from ?? -Infinity, to: p.to ?? Infinity }))
    .sort((a, b) => a.from - b.from);
  const until = now + partitionsAheadMs(width);
  const out: Array<{ from: number; to: number }> = [];
  for (let slot = Math.floor((now - width) / width) * width; slot < until; slot += width) {
    let from = slot;
    const to = slot + width;
    for (const c of covered) {
      if (c.to <= from || c.from >= to) continue;
      if (c.from > from) out.push({ from, to: c.from });
      from = Math.max(from, c.to);
      if (from >= to) break;
    }
    if (from < to) out.push({ from, to });
  }
  return out;
}

/** The partitions wholly before `cutoff`: every row in them finished (or was started) before it. Never the queue's. */
export function partitionsToDrop<T extends PartitionBounds>(existing: T[], cutoff: number): T[] {
  return existing.filter((p) => p.to !== null && Number.isFinite(p.to) && p.to <= cutoff);
}

/** `callback_20261203_170000`: the table and the partition's lower bound (UTC, whole seconds). */
export function partitionName(table: string, from: number): string {
  const iso = new Date(from).toISOString(); // 2026-12-03T17:00:00.000Z
  return `${table}_${iso.slice(0, 10).replaceAll('-', '')}_${iso.slice(11, 19).replaceAll(':', '')}`;
}
