import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type pg from 'pg';
import { describe, expect, it } from 'vitest';
import { startService } from '../../src/app.factory.js';
import { loadConfig } from '../../src/config/app.config.js';
import { KEY_FILE, loadKeyring, newSecretsKey } from '../../src/config/secret-keyring.js';
import { useTestDatabase } from '../support/database.js';
import { startTestService, TEST_KEY, waitFor, type TestService } from '../support/service.js';

// Secrets at rest (issue 30): signing secrets are stored sealed under SECRETS_KEY, the
// key's id beside each; a start refuses a key that cannot open them; rotation re-seals
// online; expired secrets are deleted.

const put = (service: TestService, name: string) => service.apiJson(`/v1/receivers/${name}`, { method: 'PUT', json: { url: `http://127.0.0.21:9/${name}` } });
const secretsOf = async (service: TestService, name: string): Promise<string[]> =>
  ((await service.apiJson(`/v1/receivers/${name}`)).secrets as Array<{ secret: string }>).map((s) => s.secret);

/** Every row of every table of the database as text: the data a dump holds. */
async function everyRow(db: pg.Client): Promise<string> {
  const tables = (
    await db.query<{ t: string }>(
      `SELECT format('%I.%I', schemaname, tablename) AS t FROM pg_tables WHERE schemaname NOT IN ('pg_catalog', 'information_schema')`,
    )
  ).rows;
  const out: string[] = [];
  for (const { t } of tables) out.push(...(await db.query<{ r: string }>(`SELECT x::text AS r FROM ${t} x`)).rows.map((r) => r.r));
  return out.join('\n');
}

/** A pg_dump that can dump this server (its major version at least the server's), if the machine has one. */
function pgDumpFor(serverMajor: number): string | undefined {
  const root = '/usr/lib/postgresql';
  if (!existsSync(root)) return undefined;
  const majors = readdirSync(root)
    .map(Number)
    .filter((v) => v >= serverMajor && existsSync(path.join(root, String(v), 'bin', 'pg_dump')));
  return majors.length ? path.join(root, String(Math.max(...majors)), 'bin', 'pg_dump') : undefined;
}

describe('signing secrets at rest', () => {
  const t = useTestDatabase();
  const keyA = newSecretsKey();
  const keyB = newSecretsKey();

  it('should keep no whsec_ value in the database (every row read, and pg_dump where the machine has one)', async () => {
    const service = await startTestService({ secretsKey: keyA }, t.url);
    try {
      await put(service, 'dump-a');
      await service.apiJson('/v1/receivers/dump-a/secret/rotate', { method: 'POST' });
      const destination = await service.apiJson('/v1/signing-secret?destination=http://127.0.0.22:9');
      const shown = [...(await secretsOf(service, 'dump-a')), ...destination.secrets.map((s: { secret: string }) => s.secret)];
      expect(shown).toHaveLength(3);
      for (const s of shown) expect(s).toMatch(/^whsec_/);

      const rows = await everyRow(t.db);
      expect(rows).not.toContain('whsec_');
      for (const s of shown) expect(rows).not.toContain(s.slice('whsec_'.length));
      const stored = (await t.db.query<{ key_id: string | null }>('SELECT key_id FROM signing_secret')).rows;
      expect(stored.length).toBe(3);
      expect(new Set(stored.map((r) => r.key_id))).toEqual(new Set([(await service.apiJson('/v1/secrets-key')).currentKeyId]));

      const major = Number((await t.db.query<{ v: string }>(`SELECT current_setting('server_version_num') AS v`)).rows[0].v) / 10000;
      const pgDump = pgDumpFor(Math.floor(major));
      if (pgDump) {
        const dump = spawnSync(pgDump, ['--data-only', t.url], { encoding: 'utf8', maxBuffer: 256 * 1024 * 1024 });
        expect(dump.status, dump.stderr).toBe(0);
        expect(dump.stdout).toContain('signing_secret');
        expect(dump.stdout).not.toContain('whsec_');
      }
    } finally {
      await service.stop();
    }
  });

  it('should refuse a key that cannot open the stored secrets, naming it, and re-encrypt online under a new one', async () => {
    let service = await startTestService({ secretsKey: keyA }, t.url);
    await put(service, 'rotate-a');
    const before = await secretsOf(service, 'rotate-a');
    const idA = (await service.apiJson('/v1/secrets-key')).currentKeyId as string;
    await service.stop();

    // B alone cannot open what A sealed: the start says so, with A's id.
    await expect(startTestService({ secretsKey: keyB }, t.url)).rejects.toThrow(
      new RegExp(`sealed under key ${idA} .*neither SECRETS_KEY nor SECRETS_KEY_PREVIOUS`),
    );

    // B with A as previous: the same secrets, then re-sealed under B, online.
    service = await startTestService({ secretsKey: keyB, secretsKeyPrevious: [keyA] }, t.url);
    try {
      expect(await secretsOf(service, 'rotate-a')).toEqual(before);
      const view = await service.apiJson('/v1/secrets-key');
      expect(view.keys.find((k: { keyId: string }) => k.keyId === idA)).toMatchObject({ current: false, held: true });
      const done = await service.apiJson('/v1/secrets-key/reencrypt', { method: 'POST' });
      expect(done.reencrypted).toBeGreaterThanOrEqual(1);
      expect(done.keys).toEqual([{ keyId: done.currentKeyId, secrets: expect.any(Number), current: true, held: true }]);
      // only an admin key may
      const other = (await service.apiJson('/v1/keys', { method: 'POST', json: { name: 'tenant' } })).key;
      expect((await service.api('/v1/secrets-key/reencrypt', { method: 'POST', key: other })).status).toBe(403);
    } finally {
      await service.stop();
    }
    service = await startTestService({ secretsKey: keyB }, t.url);
    try {
      expect(await secretsOf(service, 'rotate-a')).toEqual(before);
    } finally {
      await service.stop();
    }
  });

  it('should seal secrets stored in plain text (before the upgrade) at start', async () => {
    const plain = `whsec_${Buffer.alloc(24, 3).toString('base64')}`;
    const service0 = await startTestService({ secretsKey: keyB }, t.url);
    await put(service0, 'plain-a');
    await service0.stop();
    await t.db.query(`UPDATE signing_secret s SET secret = $1, key_id = NULL FROM receiver r WHERE r.id = s.receiver_id AND r.name = 'plain-a'`, [plain]);
    const service = await startTestService({ secretsKey: keyB }, t.url);
    try {
      expect(await secretsOf(service, 'plain-a')).toEqual([plain]);
      expect((await t.db.query(`SELECT 1 FROM signing_secret WHERE key_id IS NULL OR secret LIKE 'whsec_%'`)).rowCount).toBe(0);
    } finally {
      await service.stop();
    }
  });

  it('should delete expired secrets in maintenance', async () => {
    const service = await startTestService({ secretsKey: keyB, dispatchPollMs: 100 }, t.url);
    try {
      await put(service, 'expire-a');
      await service.apiJson('/v1/receivers/expire-a/secret/rotate', { method: 'POST' });
      expect(await secretsOf(service, 'expire-a')).toHaveLength(2);
      await t.db.query(
        `UPDATE signing_secret s SET expires_at = now() - interval '1 second' FROM receiver r WHERE r.id = s.receiver_id AND r.name = 'expire-a' AND s.expires_at IS NOT NULL`,
      );
      await waitFor(async () => {
        const { rows } = await t.db.query(`SELECT count(*)::int AS n FROM signing_secret s JOIN receiver r ON r.id = s.receiver_id WHERE r.name = 'expire-a'`);
        return rows[0].n === 1;
      });
      expect(await secretsOf(service, 'expire-a')).toHaveLength(1);
    } finally {
      await service.stop();
    }
  });

  it('should refuse to start on an external database without SECRETS_KEY, naming it', async () => {
    const config = loadConfig({}, { port: 0, databaseUrl: t.url, logLevel: 'error', bootstrapApiKey: TEST_KEY });
    await expect(startService(config)).rejects.toThrow(/SECRETS_KEY is not set/);
    expect(() => loadConfig({ SECRETS_KEY: 'c2hvcnQ=' })).toThrow(/SECRETS_KEY=\(not shown\): must be 32 bytes, base64/);
  });

  it('should make the embedded default a key file in DATA_DIR, mode 0600, and keep using it', () => {
    const dataDir = mkdtempSync(path.join(os.tmpdir(), 'secrets-key-'));
    try {
      const first = loadKeyring({ dataDir, secretsKeyPrevious: [] });
      const file = path.join(dataDir, KEY_FILE);
      expect(first.source).toMatch(/made now/);
      expect(statSync(file).mode & 0o777).toBe(0o600);
      const again = loadKeyring({ dataDir, secretsKeyPrevious: [] });
      expect(again.keyring.currentId).toBe(first.keyring.currentId);
      expect(again.source).not.toMatch(/made now/);
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
