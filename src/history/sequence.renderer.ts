import type { BatchAttemptRow } from '../callbacks/callback.repository.js';
/** One call on a batch timeline, times in ms from the batch's first send. */
export interface TimelineCall {
  callbackId: string;
  url: string;
  externalId: string | null;
  attempt: number;
  /** HTTP status; 0 when there was no response (timeout, connection error…), as curl reports it. */
  code: number;
  outcome: string;
  startMs: number;
  endMs: number;
  totalMs: number;
  phases: { dnsMs: number | null; connectMs: number | null; tlsMs: number | null; firstByteMs: number | null };
}

export interface Timeline {
  startedAt: string | null;
  spanMs: number;
  calls: TimelineCall[];
}

export const BAR_WIDTH = 100;

const seconds = (ms: number) => (ms / 1000).toFixed(3);

/**
 * The ASCII sequence diagram: per call one line
 * `(url :: code=200, start=0.000, end=0.301, total=0.301)` (seconds from the first
 * send) and a 100-column bar `[   ====   ]` placing the call on the batch's time axis.
 */
export function renderSequence(timeline: Timeline, width = BAR_WIDTH): string {
  if (timeline.calls.length === 0) return 'no attempts yet\n';
  const span = Math.max(timeline.spanMs, 1);
  const lines: string[] = [];
  for (const c of timeline.calls) {
    const from = Math.min(width - 1, Math.floor((c.startMs / span) * width));
    const to = Math.max(from + 1, Math.min(width, Math.ceil((c.endMs / span) * width)));
    lines.push(`(${c.url} :: code=${c.code}, start=${seconds(c.startMs)}, end=${seconds(c.endMs)}, total=${seconds(c.totalMs)})`);
    lines.push(`[${' '.repeat(from)}${'='.repeat(to - from)}${' '.repeat(width - to)}]`);
  }
  lines.push(`${timeline.calls.length} calls, span ${seconds(timeline.spanMs)} s from ${timeline.startedAt}`);
  return `${lines.join('\n')}\n`;
}

/** Builds the timeline from attempt rows. */
export function buildTimeline(rows: BatchAttemptRow[]): Timeline {
  if (rows.length === 0) return { startedAt: null, spanMs: 0, calls: [] };
  const t0 = Math.min(...rows.map((r) => r.startedAt.getTime()));
  const calls = rows.map((r) => {
    const startMs = r.startedAt.getTime() - t0;
    return {
      callbackId: r.callbackId,
      url: r.url,
      externalId: r.externalId,
      attempt: r.number,
      code: r.statusCode ?? 0,
      outcome: r.outcome,
      startMs,
      endMs: startMs + r.durationMs,
      totalMs: r.durationMs,
      phases: { dnsMs: r.dnsMs, connectMs: r.connectMs, tlsMs: r.tlsMs, firstByteMs: r.firstByteMs },
    };
  });
  calls.sort((a, b) => a.startMs - b.startMs);
  return { startedAt: new Date(t0).toISOString(), spanMs: Math.max(...calls.map((c) => c.endMs)), calls };
}
