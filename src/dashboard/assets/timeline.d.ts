// Types of timeline.js (a plain ES module served to the browser as is) for its spec.
export interface Phases {
  dnsMs: number | null;
  connectMs: number | null;
  tlsMs: number | null;
  firstByteMs: number | null;
}
export interface Call {
  totalMs: number;
  outcome: string;
  phases?: Phases;
}
export interface Segment {
  name: string;
  fromMs: number;
  toMs: number;
}
export const OUTCOME_COLOURS: Record<string, string>;
export const OTHER_COLOUR: string;
export function colourOf(outcome: string): string;
export function formatMs(ms: number | null | undefined): string;
export function niceTicks(spanMs: number, maxTicks?: number): number[];
export function phaseSegments(call: Call): Segment[];
export function rowHeight(count: number): number;
export function visibleRows(scrollTop: number, viewHeight: number, rowH: number, count: number): { first: number; last: number };
export function rowAt(y: number, rowH: number, count: number): number;
export function percentile(sorted: number[], p: number): number | null;
export function phaseSummary(calls: Call[]): Array<{ name: string; count: number; p50: number | null; p90: number | null }>;
export function outcomeCounts(calls: Call[]): Array<{ outcome: string; count: number }>;
export const PHASE_COLOURS: Record<string, string>;
export const ORDERS: string[];
export function orderCalls<T extends Call & { startMs: number }>(calls: T[], order: string): T[];
