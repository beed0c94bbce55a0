import { describe, expect, it } from 'vitest';
import { directTarget } from './database.target.js';
import { checkServer, describeServer, type ServerFacts, UnsupportedServerError } from './server.check.js';

const facts = (over: Partial<ServerFacts> = {}): ServerFacts => ({
  version: '15.18 (Debian 15.18-0+deb12u1)',
  versionNum: 150018,
  jit: 'on',
  jitAvailable: true,
  synchronousCommit: 'on',
  ...over,
});

describe('server check', () => {
  it.each([
    ['14.13', 140013],
    ['13.16', 130016],
    ['9.6.24', 90624],
  ])('should refuse PostgreSQL %s, naming it and the minimum', (version, versionNum) => {
    expect(() => checkServer(facts({ version, versionNum }))).toThrow(UnsupportedServerError);
    expect(() => checkServer(facts({ version, versionNum }))).toThrow(`PostgreSQL ${version} is not supported: the service needs PostgreSQL 15 or newer`);
  });

  it.each([150000, 150018, 160010, 170006, 180004])('should accept server_version_num %i', (versionNum) => {
    expect(() => checkServer(facts({ versionNum }))).not.toThrow();
  });

  it('should say what the server runs with and how it is reached', () => {
    expect(describeServer(facts(), directTarget('postgresql://x/y'))).toBe(
      "PostgreSQL 15.18 (Debian 15.18-0+deb12u1): jit on, synchronous_commit on (the worker's own statements set theirs), direct connection",
    );
    const pooled = { url: 'postgresql://pooler/y', directUrl: 'postgresql://x/y', pooled: true };
    expect(describeServer(facts({ version: '18.4', jitAvailable: false }), pooled)).toMatch(
      /^PostgreSQL 18\.4: jit not built in, .*DATABASE_URL through a transaction pooler \(statements unnamed\), sessions on DATABASE_DIRECT_URL$/,
    );
  });
});
