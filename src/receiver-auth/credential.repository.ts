import { Injectable } from '@nestjs/common';
import { uuidv7 } from '../common/uuid.js';
import { ApiDatabase } from '../database/api-database.js';
import type { SqlRunner } from '../database/pg.statements.js';
import { SecretKeyring } from '../config/secret-keyring.js';
import type { AuthShown, Credentials, SealedParts, TlsShown } from './credential.policy.js';
import { credentialsOf, deleteCredential, insertCredential, lockCredential, type CredentialRow, type SendingCredentialRow } from './credential.sql.js';

/** What a credential's sealing names as its row: the receiver and the version, so a sealed value copied to another row or version does not open. */
export const credentialAad = (receiverId: string, version: string) => `receiver credential ${receiverId} ${version}`;

/** A receiver's credentials as the worker uses them: opened, with the version that names them (tokens, connection pools). */
export interface StoredCredentials extends Credentials {
  receiverId: string;
  version: string;
}

/** Stored credentials with what their calls may reach besides the public internet (the token request's check). */
export interface SendingCredentials extends StoredCredentials {
  /** Its key is granted the ranges ALLOW_PRIVATE_NETWORKS opens. */
  keyPrivateNetworks: boolean;
  /** Destinations a portal session chose for the receiver: its calls there go to public addresses only. */
  portalHosts: string[];
}

/**
 * receiver_credential as the service uses it: sealed under the keyring's current key
 * on the way in, opened on the way out; nothing else reads or writes `sealed`
 * (except secret-reseal.ts, which re-seals).
 */
@Injectable()
export class CredentialRepository {
  constructor(
    private readonly db: ApiDatabase,
    private readonly keyring: SecretKeyring,
  ) {}

  /** The receiver's credentials, locked until `tx` ends (a PUT reads, merges and writes them in the receiver's own transaction). */
  async lockCredentials(tx: SqlRunner, receiverId: string): Promise<StoredCredentials | null> {
    const [row] = await tx.query<CredentialRow>(lockCredential(receiverId));
    return row ? this.opened(row) : null;
  }

  /**
   * Replaces the receiver's credentials in `tx` with `next` under a new version (none:
   * deleted); the old version's tokens go with its row. Returns the new version.
   */
  async replaceCredentials(tx: SqlRunner, receiverId: string, next: Credentials): Promise<string | null> {
    await tx.execute(deleteCredential(receiverId));
    if (!next.auth && !next.tls) return null;
    const version = uuidv7();
    const parts: SealedParts = {
      ...(next.auth && { auth: next.auth.secret }),
      ...(next.tls && { tls: { clientKey: next.tls.clientKey } }),
    };
    const sealed = this.keyring.seal(credentialAad(receiverId, version), JSON.stringify(parts));
    const tls: TlsShown | null = next.tls && { clientCertificate: next.tls.clientCertificate, ca: next.tls.ca };
    await tx.execute(
      insertCredential({
        receiverId,
        version,
        authType: next.auth?.shown.type ?? null,
        auth: next.auth?.shown ?? null,
        tls,
        keyId: sealed.keyId,
        sealed: sealed.sealed,
      }),
    );
    return version;
  }

  /** The credentials of these receivers (those without any are left out), opened, with what their calls may reach. */
  async findCredentials(receiverIds: string[], db: SqlRunner = this.db): Promise<SendingCredentials[]> {
    if (receiverIds.length === 0) return [];
    const rows = await db.query<SendingCredentialRow>(credentialsOf(receiverIds));
    return rows.map((r) => ({ ...this.opened(r), keyPrivateNetworks: r.keyPrivateNetworks, portalHosts: r.portalHosts }));
  }

  private opened(row: CredentialRow): StoredCredentials {
    const parts = JSON.parse(this.keyring.open(credentialAad(row.receiverId, row.version), row.keyId, row.sealed)) as SealedParts;
    const shown = row.auth as AuthShown | null;
    const tls = row.tls as TlsShown | null;
    return {
      receiverId: row.receiverId,
      version: row.version,
      auth: shown && parts.auth ? { shown, secret: parts.auth } : null,
      tls: tls && { ...tls, clientKey: parts.tls?.clientKey ?? null },
    };
  }
}
