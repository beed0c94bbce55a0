import { mkdtempSync, mkdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { readMigrations, statementsOf } from './migrator.js';

describe('statementsOf', () => {
  it('should split after each ; that ends a line, dropping comments before a statement, and keep a one-line DO block whole', () => {
    const sql = [
      '-- migrate: outside a transaction',
      '-- why',
      'ALTER TABLE a ADD COLUMN IF NOT EXISTS x int;',
      '',
      '-- the index',
      'CREATE INDEX CONCURRENTLY i ON a (x);  ',
      "DO $$ DECLARE b int := 1; BEGIN EXECUTE format('SELECT %s', b); END $$;",
    ].join('\n');
    expect(statementsOf(sql)).toEqual([
      'ALTER TABLE a ADD COLUMN IF NOT EXISTS x int',
      'CREATE INDEX CONCURRENTLY i ON a (x)',
      "DO $$ DECLARE b int := 1; BEGIN EXECUTE format('SELECT %s', b); END $$",
    ]);
  });
});

describe('readMigrations', () => {
  it('should read the header lines and the earlier checksums of each migration', () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'migrations-'));
    const write = (name: string, sql: string, earlier?: string) => {
      mkdirSync(path.join(dir, name));
      writeFileSync(path.join(dir, name, 'migration.sql'), sql);
      if (earlier !== undefined) writeFileSync(path.join(dir, name, 'earlier-checksums'), earlier);
    };
    write('2_prepare', "-- migrate: outside a transaction\n-- migrate: only when SELECT relkind = 'r' FROM pg_class WHERE oid = 'a'::regclass\nSELECT 1;\n");
    write('1_plain', 'SELECT 1;\n', `${'a'.repeat(64)}\nnot a checksum\n${'b'.repeat(64)}\n`);
    const [plain, prepare] = readMigrations(dir);
    expect(plain).toMatchObject({ name: '1_plain', outsideTransaction: false, onlyWhen: null, earlier: ['a'.repeat(64), 'b'.repeat(64)] });
    expect(prepare).toMatchObject({
      name: '2_prepare',
      outsideTransaction: true,
      onlyWhen: "SELECT relkind = 'r' FROM pg_class WHERE oid = 'a'::regclass",
      earlier: [],
    });
  });
});
