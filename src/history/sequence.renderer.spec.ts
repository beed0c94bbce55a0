import { describe, expect, it } from 'vitest';
import { buildTimeline, renderSequence } from './sequence.renderer.js';

const row = (url: string, startOffsetMs: number, durationMs: number, statusCode: number | null, outcome = 'success') => ({
  callbackId: url,
  url,
  externalId: null,
  number: 1,
  startedAt: new Date(Date.parse('2026-11-30T12:00:00Z') + startOffsetMs),
  durationMs,
  statusCode,
  outcome,
  dnsMs: 0,
  connectMs: 0,
  tlsMs: null,
  firstByteMs: durationMs,
});

describe('sequence.renderer', () => {
  it('should put each call on the batch time axis', () => {
    const text = renderSequence(buildTimeline([row('http://a/', 0, 1000, 200), row('http://b/', 500, 500, null, 'timeout')]));
    const lines = text.trim().split('\n');
    expect(lines[0]).toBe('(http://a/ :: code=200, start=0.000, end=1.000, total=1.000)');
    expect(lines[1]).toBe(`[${'='.repeat(100)}]`);
    expect(lines[2]).toBe('(http://b/ :: code=0, start=0.500, end=1.000, total=0.500)');
    expect(lines[3]).toBe(`[${' '.repeat(50)}${'='.repeat(50)}]`);
    expect(lines[4]).toMatch(/^2 calls, span 1\.000 s from 2026-11-30T12:00:00\.000Z$/);
  });

  it('should draw at least one column for an instant call', () => {
    const lines = renderSequence(buildTimeline([row('http://a/', 0, 1000, 200), row('http://c/', 1000, 0, 200)])).split('\n');
    expect(lines[3]).toBe(`[${' '.repeat(99)}=]`);
  });

  it('should sort calls by start and keep every line 102 columns wide', () => {
    const rows = [row('http://late/', 900, 10, 200), row('http://early/', 0, 50, 200), row('http://mid/', 300, 700, 500, 'http_error')];
    const lines = renderSequence(buildTimeline(rows)).trim().split('\n');
    expect(lines.filter((_, i) => i % 2 === 0 && i < 6).map((l) => l.split(' ')[0])).toEqual(['(http://early/', '(http://mid/', '(http://late/']);
    for (const bar of lines.filter((l) => l.startsWith('['))) expect(bar).toHaveLength(102);
  });

  it('should say so when nothing was attempted', () => {
    expect(renderSequence(buildTimeline([]))).toBe('no attempts yet\n');
  });
});
