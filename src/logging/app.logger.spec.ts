import { describe, expect, it } from 'vitest';
import { AppLogger } from './app.logger.js';
import { requestContext } from './request.context.js';

function capture(level: 'error' | 'warn' | 'log' | 'debug' | 'verbose', secrets: string[] = []) {
  const lines: Array<Record<string, unknown>> = [];
  const logger = new AppLogger(level, secrets, { write: (s: string) => lines.push(JSON.parse(s)) });
  return { logger, lines };
}

describe(AppLogger.name, () => {
  it('should write one JSON line with level, time, context and message', () => {
    const { logger, lines } = capture('log');
    logger.log('batch 1 accepted', 'BatchService');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({ level: 'info', context: 'BatchService', msg: 'batch 1 accepted' });
    expect(new Date(lines[0].time as string).toISOString()).toBe(lines[0].time);
  });

  it.each([
    ['error', ['error'], ['warn', 'log', 'debug', 'verbose']],
    ['warn', ['error', 'warn'], ['log', 'debug', 'verbose']],
    ['log', ['error', 'warn', 'log'], ['debug', 'verbose']],
    ['verbose', ['error', 'warn', 'log', 'debug', 'verbose'], []],
  ] as const)('should honour LOG_LEVEL=%s', (level, shown, hidden) => {
    const { logger, lines } = capture(level);
    for (const l of [...shown, ...hidden]) logger[l](l);
    expect(lines.map((l) => l.msg)).toEqual(shown);
  });

  it('should carry the request id of the request being served', () => {
    const { logger, lines } = capture('log');
    requestContext.run({ requestId: 'req-42' }, () => logger.log('inside'));
    logger.log('outside');
    expect(lines[0].requestId).toBe('req-42');
    expect(lines[1]).not.toHaveProperty('requestId');
  });

  it('should merge an object message into the line and keep an error stack', () => {
    const { logger, lines } = capture('log');
    logger.log({ msg: 'batch completed', batchId: 'b1', completedAt: '2026-11-30T12:00:00.000Z' }, 'DispatcherService');
    logger.error({ requestId: 'r1', method: 'GET' }, 'Error: boom\n    at x', 'Error');
    expect(lines[0]).toMatchObject({ msg: 'batch completed', batchId: 'b1', context: 'DispatcherService' });
    expect(lines[1]).toMatchObject({ level: 'error', requestId: 'r1', method: 'GET', stack: 'Error: boom\n    at x', context: 'Error' });
  });

  it('should redact keys, signing secrets, bearer tokens and the bootstrap key', () => {
    const { logger, lines } = capture('log', ['my-bootstrap-key-0123456789']);
    logger.log('made cbk_live_abcdef and whsec_c2VjcmV0 for my-bootstrap-key-0123456789');
    logger.warn({ msg: 'odd request', headers: { authorization: 'Bearer cbk_x' }, note: 'Bearer abc' });
    const text = JSON.stringify(lines);
    expect(text).not.toMatch(/cbk_live|whsec_c2V|my-bootstrap-key|Bearer abc|cbk_x/);
    expect(lines[0].msg).toBe('made [redacted] and [redacted] for [redacted]');
    expect(lines[1]).toMatchObject({ headers: { authorization: '[redacted]' }, note: 'Bearer [redacted]' });
  });
});
