import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { completeBatches, openBatchesWithNothingLeft } from '../../src/queue/batch-completion.sql.js';
import { countPending } from '../../src/batches/pending.sql.js';
import type { RecordedOutcome } from '../../src/dispatch/outcome.types.js';
import { claimFront, claimPastBlocked, dueAhead, type ClaimArgs } from '../../src/dispatch/sql/claim.sql.js';
import { nextDueAt, reapExpiredLeases } from '../../src/dispatch/sql/lease.sql.js';
import { recordOutcomes, recordSuccesses, recordWithHealth, releaseClaims } from '../../src/dispatch/sql/outcome.sql.js';
import { nowSql } from '../../src/dispatch/sql/time.sql.js';
import type { Prisma } from '../../src/generated/prisma/client.js';
import { purgeEmptyBatches } from '../../src/retention/retention.sql.js';

/**
 * The hot statements written out whole, as Postgres receives them, in docs/sql/: each is
 * assembled from fragments in its *.sql.ts file, and read here in one piece. This test
 * fails when a rendering is not current; `npm run sql:render` writes them again.
 */
const OUT = path.resolve(import.meta.dirname, '../../docs/sql');
const WRITE = process.env.SQL_RENDER === '1';

const ID = '0190f1a2-0000-7000-8000-000000000001';
const claim: ClaimArgs = {
  owner: 'worker-1',
  limit: 200,
  leaseMarginMs: 30_000,
  skipHosts: ['https://full.example'],
  defaultCap: 20,
  cooldownMs: 30_000,
  affinityMs: 100,
  sendRoom: 200,
  now: nowSql(),
};
const outcome = (status: 'pending' | 'succeeded'): RecordedOutcome => ({
  callbackId: ID,
  apiKeyId: ID,
  host: 'https://example.com',
  receiverId: null,
  number: 1,
  status,
  nextAttemptAt: status === 'pending' ? new Date(0) : null,
  completedAt: status === 'pending' ? null : new Date(0),
  startedAt: new Date(0),
  durationMs: 12.5,
  dnsMs: 0,
  connectMs: 0.3,
  tlsMs: null,
  tunnelMs: null,
  firstByteMs: 12,
  statusCode: status === 'pending' ? 503 : 200,
  outcome: status === 'pending' ? 'http_error' : 'success',
  error: null,
  responseHeaders: {},
  responseBody: '',
});
const defaults = { timeoutMs: 15_000, maxAttempts: 8 };

/** Name, the file that builds it, and the statement with representative arguments. */
const STATEMENTS: Array<[string, string, Prisma.Sql]> = [
  ['claimFront', 'src/dispatch/sql/claim.sql.ts', claimFront(claim)],
  ['claimPastBlocked', 'src/dispatch/sql/claim.sql.ts', claimPastBlocked(claim)],
  ['dueAhead', 'src/dispatch/sql/claim.sql.ts', dueAhead([ID], ['https://example.com'], 2, nowSql())],
  ['recordOutcomes', 'src/dispatch/sql/outcome.sql.ts', recordOutcomes('worker-1', [outcome('succeeded'), outcome('pending')])],
  ['recordSuccesses', 'src/dispatch/sql/outcome.sql.ts', recordSuccesses('worker-1', [outcome('succeeded')], new Map([[ID, new Date(0)]]))],
  ['recordWithHealth', 'src/dispatch/sql/outcome.sql.ts', recordWithHealth('worker-1', [outcome('succeeded'), outcome('pending')], [ID], defaults)],
  ['releaseClaims', 'src/dispatch/sql/outcome.sql.ts', releaseClaims('worker-1', [ID])],
  ['reapExpiredLeases', 'src/dispatch/sql/lease.sql.ts', reapExpiredLeases(nowSql(), 1000, defaults)],
  ['nextDueAt', 'src/dispatch/sql/lease.sql.ts', nextDueAt()],
  ['completeBatches', 'src/queue/batch-completion.sql.ts', completeBatches([ID], defaults)],
  ['openBatchesWithNothingLeft', 'src/queue/batch-completion.sql.ts', openBatchesWithNothingLeft(100)],
  ['countPending', 'src/batches/pending.sql.ts', countPending(ID, 100_000)],
  ['purgeEmptyBatches', 'src/retention/retention.sql.ts', purgeEmptyBatches(new Date(0), 1000)],
];

/** The statement's text with its lines' common indentation and trailing blanks taken off, after a header naming where it is built. */
function render(name: string, source: string, statement: Prisma.Sql): string {
  const lines = statement.text.split('\n').map((l) => l.trimEnd());
  while (lines.length > 0 && lines[0] === '') lines.shift();
  while (lines.length > 0 && lines.at(-1) === '') lines.pop();
  const indent = Math.min(...lines.filter((l) => l !== '').map((l) => l.length - l.trimStart().length));
  const body = lines.map((l) => l.slice(indent)).join('\n');
  return `-- ${name}, built in ${source}; ${statement.values.length} parameters.\n-- Rendered by \`npm run sql:render\` (test/unit/hot-statements.test.ts checks it is current).\n${body};\n`;
}

describe('hot statements rendered in docs/sql', () => {
  it.each(STATEMENTS)('should have %s written out as it is built now', (name, source, statement) => {
    const file = path.join(OUT, `${name}.sql`);
    const text = render(name, source, statement);
    if (WRITE) {
      mkdirSync(OUT, { recursive: true });
      writeFileSync(file, text);
    }
    expect(existsSync(file), `${file} is missing: run npm run sql:render`).toBe(true);
    expect(readFileSync(file, 'utf8'), `${file} is not current: run npm run sql:render`).toBe(text);
  });
});
