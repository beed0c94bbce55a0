// Pure text formatting of the CLI's output (table-tested in cli.format.spec.ts).

export interface Counts {
  pending: number;
  in_flight: number;
  succeeded: number;
  failed: number;
  cancelled: number;
}

/** `[#########...........]  9/20 done  (8 ok, 1 failed, 11 open)  1.2 s` */
export function progressLine(counts: Counts, total: number, elapsedMs: number, width = 30): string {
  const done = counts.succeeded + counts.failed + counts.cancelled;
  const filled = total === 0 ? width : Math.min(width, Math.floor((done / total) * width));
  const open = counts.pending + counts.in_flight;
  const parts = [`${counts.succeeded} ok`, `${counts.failed} failed`];
  if (counts.cancelled) parts.push(`${counts.cancelled} cancelled`);
  parts.push(`${open} open`);
  return `[${'#'.repeat(filled)}${'.'.repeat(width - filled)}] ${String(done).padStart(String(total).length)}/${total} done  (${parts.join(', ')})  ${(elapsedMs / 1000).toFixed(1)} s`;
}

/** Left-aligned text table with a header row; numbers right-aligned. */
export function table(headers: string[], rows: Array<Array<string | number | null>>): string {
  const cells = rows.map((r) => r.map((c) => (c === null || c === undefined ? '-' : String(c))));
  const widths = headers.map((h, i) => Math.max(h.length, ...cells.map((r) => r[i].length)));
  const numeric = headers.map((_, i) => cells.length > 0 && cells.every((r) => /^-?[\d.]+( ms)?$|^-$/.test(r[i])));
  const line = (r: string[]) =>
    r
      .map((c, i) => (numeric[i] ? c.padStart(widths[i]) : c.padEnd(widths[i])))
      .join('  ')
      .trimEnd();
  return [line(headers), line(widths.map((w) => '-'.repeat(w))), ...cells.map(line)].join('\n');
}

export function ms(value: number | null | undefined): string {
  return value === null || value === undefined ? '-' : `${Math.round(value)} ms`;
}
