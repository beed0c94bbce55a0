import { describe, expect, it } from 'vitest';
import { parseCliArgs, parseDuration, UsageError } from './cli.args.js';

describe('parseCliArgs', () => {
  it.each([
    [['send', 'b.json', '--wait'], {}, { command: 'send', positionals: ['b.json'], wait: true, url: 'http://127.0.0.1:3000' }],
    [['status', 'abc', '--url', 'http://127.0.0.2:4000/'], {}, { command: 'status', positionals: ['abc'], url: 'http://127.0.0.2:4000' }],
    [['keys', 'create', 'ci', '--admin'], { CALLBACKS_API_KEY: 'cbk_env' }, { positionals: ['create', 'ci'], admin: true, key: 'cbk_env' }],
    [['history', '--host', 'https://a.example:443', '--since', '6h'], {}, { host: 'https://a.example:443', sinceMs: 21_600_000 }],
    [
      ['keys', 'list', '--key', 'cbk_flag'],
      { CALLBACKS_API_KEY: 'cbk_env', CALLBACKS_URL: 'http://127.0.0.3:1' },
      { key: 'cbk_flag', url: 'http://127.0.0.3:1' },
    ],
    [['send', 'x', '--wait', '--wait-timeout', '1.5'], {}, { waitTimeoutMs: 1500 }],
    [[], {}, { command: '', help: false }],
    [['-h'], {}, { help: true }],
  ])('should read %j', (argv, env, expected) => {
    expect(parseCliArgs(argv, env)).toMatchObject(expected);
  });

  it.each([
    [['send', '--nope']],
    [['status', '--url', 'ftp://x']],
    [['status', '--url', 'http://h/path']],
    [['send', 'x', '--wait-timeout', '0']],
    [['history', '--since', '10y']],
  ])('should refuse %j with a usage error', (argv) => {
    expect(() => parseCliArgs(argv, {})).toThrow(UsageError);
  });

  it.each([
    ['90s', 90_000],
    ['15m', 900_000],
    ['1h', 3_600_000],
    ['7d', 604_800_000],
  ])('should read the duration %s', (raw, ms) => {
    expect(parseDuration(raw)).toBe(ms);
  });
});
