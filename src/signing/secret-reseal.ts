import { openPool, PgStatements } from '../database/pg.statements.js';
import { credentialAad } from '../receiver-auth/credential.repository.js';
import { credentialsToSeal, dropTokensNotUnder, storeSealedCredentials } from '../receiver-auth/credential.sql.js';
import { FIRST_ID, secretsPerKey, secretsToSeal, storeSealed } from './secret.sql.js';
import type { SecretKeyring } from '../config/secret-keyring.js';

/** Secrets sealed per statement (and per transaction) when re-sealing. */
export const RESEAL_CHUNK = 1000;

export interface KeyCount {
  /** null: plain text (not sealed yet). */
  keyId: string | null;
  secrets: number;
}

/**
 * Seals, under the keyring's current key, every secret not sealed under it (or only
 * the plain text ones), in chunks of `chunk` rows by id, each its own transaction:
 * rows are locked for one chunk's time, the service keeps signing meanwhile (a row
 * opens under its old key until its chunk commits, under the new one after). Then,
 * unless only plain text is asked for, receivers' credentials the same way, and the
 * cached OAuth2 tokens under another key are dropped (fetched anew when next
 * needed). Returns how many it sealed.
 */
export async function resealSecrets(
  db: PgStatements,
  keyring: SecretKeyring,
  { plainTextOnly, chunk = RESEAL_CHUNK, onChunk }: { plainTextOnly: boolean; chunk?: number; onChunk?: (sealed: number) => void },
): Promise<number> {
  let after = FIRST_ID;
  let sealed = 0;
  for (;;) {
    const n = await db.transaction(async (tx) => {
      const rows = await tx.query<{ id: string; keyId: string | null; secret: string }>(secretsToSeal(keyring.currentId, after, chunk, plainTextOnly));
      if (rows.length === 0) return 0;
      await tx.execute(storeSealed(rows.map((r) => ({ id: r.id, ...keyring.seal(r.id, keyring.open(r.id, r.keyId, r.secret)) }))));
      after = rows[rows.length - 1].id;
      return rows.length;
    });
    if (n === 0) break;
    sealed += n;
    onChunk?.(sealed);
  }
  if (plainTextOnly) return sealed; // credentials are sealed from the start
  after = FIRST_ID;
  for (;;) {
    const n = await db.transaction(async (tx) => {
      const rows = await tx.query<{ id: string; version: string; keyId: string; sealed: string }>(credentialsToSeal(keyring.currentId, after, chunk));
      if (rows.length === 0) return 0;
      const resealed = rows.map((r) => {
        const aad = credentialAad(r.id, r.version);
        return { id: r.id, ...keyring.seal(aad, keyring.open(aad, r.keyId, r.sealed)) };
      });
      await tx.execute(storeSealedCredentials(resealed));
      after = rows[rows.length - 1].id;
      return rows.length;
    });
    if (n === 0) break;
    sealed += n;
    onChunk?.(sealed);
  }
  await db.execute(dropTokensNotUnder(keyring.currentId));
  return sealed;
}

/** How many secrets each key seals (keyId null: plain text). */
export function countSecretsPerKey(db: PgStatements): Promise<KeyCount[]> {
  return db.query<KeyCount>(secretsPerKey());
}

/**
 * At start, before anything is served: refuses a keyring that cannot open every
 * stored secret (naming the keys it lacks), then seals the plain text ones. Returns
 * how many it sealed.
 */
export async function prepareSecretsAtRest(databaseUrl: string, keyring: SecretKeyring): Promise<{ sealed: number; counts: KeyCount[] }> {
  const pool = openPool(databaseUrl, 1, () => undefined); // one short-lived connection; an idle error ends nothing here
  try {
    const db = new PgStatements(pool, null);
    const counts = await countSecretsPerKey(db);
    const missing = counts.filter((c) => c.keyId !== null && !keyring.holds(c.keyId));
    if (missing.length > 0) {
      throw new Error(
        `signing secrets are sealed under ${missing.map((c) => `key ${c.keyId} (${c.secrets})`).join(', ')}, which neither SECRETS_KEY ` +
          `nor SECRETS_KEY_PREVIOUS holds (they hold ${keyring.ids.join(', ')}). Start with the key they were sealed under ` +
          '(as SECRETS_KEY, or in SECRETS_KEY_PREVIOUS beside a new SECRETS_KEY).',
      );
    }
    const sealed = counts.some((c) => c.keyId === null) ? await resealSecrets(db, keyring, { plainTextOnly: true }) : 0;
    return { sealed, counts };
  } finally {
    await pool.end();
  }
}
