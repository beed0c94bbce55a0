import { Injectable } from '@nestjs/common';
import { uuidv7 } from '../common/uuid.js';
import { ApiDatabase } from '../database/api-database.js';
import { SecretKeyring } from '../config/secret-keyring.js';
import { readToken, releaseTokenLease, storeToken, takeTokenLease } from './token.sql.js';

/** A token as a worker keeps it: `tokenId` names it (to drop it after a 401), times are epoch ms. */
export interface SharedToken {
  tokenId: string;
  accessToken: string;
  refreshAt: number;
  expiresAt: number;
}

export interface TokenRowState {
  token: SharedToken | null;
  /** Another worker holds the lease: its token is on the way. */
  fetching: boolean;
}

const tokenAad = (receiverId: string, version: string, tokenId: string) => `receiver token ${receiverId} ${version} ${tokenId}`;

/**
 * receiver_token (token.sql.ts): the OAuth2 token of one version of a receiver's
 * credentials, shared by every worker, sealed under SECRETS_KEY like the credentials.
 */
@Injectable()
export class TokenRepository {
  constructor(
    private readonly db: ApiDatabase,
    private readonly keyring: SecretKeyring,
  ) {}

  async readToken(receiverId: string, version: string): Promise<TokenRowState> {
    const [row] = await this.db.query<{
      tokenId: string | null;
      keyId: string | null;
      sealed: string | null;
      refreshAt: Date | null;
      expiresAt: Date | null;
      fetching: boolean;
    }>(readToken(receiverId, version));
    if (!row) return { token: null, fetching: false };
    // a token sealed under a key this process lacks (a rotation under way) is as good as none: fetched anew
    if (!row.tokenId || !row.keyId || !this.keyring.holds(row.keyId)) return { token: null, fetching: row.fetching };
    const accessToken = this.keyring.open(tokenAad(receiverId, version, row.tokenId), row.keyId, row.sealed!);
    return { token: { tokenId: row.tokenId, accessToken, refreshAt: row.refreshAt!.getTime(), expiresAt: row.expiresAt!.getTime() }, fetching: row.fetching };
  }

  /** True when `owner` now holds the lease to fetch (takeTokenLease). */
  async takeLease(receiverId: string, version: string, owner: string, leaseMs: number, rejectedTokenId: string | null): Promise<boolean> {
    const rows = await this.db.query<{ taken: boolean }>(takeTokenLease(receiverId, version, owner, Math.ceil(leaseMs), rejectedTokenId));
    return rows.length > 0;
  }

  /** Seals and stores the token `owner` fetched under its lease; answers it as kept. */
  async storeToken(
    receiverId: string,
    version: string,
    owner: string,
    t: { accessToken: string; fetchedAt: number; refreshAt: number; expiresAt: number },
  ): Promise<SharedToken> {
    const tokenId = uuidv7();
    const sealed = this.keyring.seal(tokenAad(receiverId, version, tokenId), t.accessToken);
    await this.db.execute(
      storeToken(receiverId, version, owner, {
        tokenId,
        ...sealed,
        fetchedAt: new Date(t.fetchedAt),
        refreshAt: new Date(t.refreshAt),
        expiresAt: new Date(t.expiresAt),
      }),
    );
    return { tokenId, accessToken: t.accessToken, refreshAt: t.refreshAt, expiresAt: t.expiresAt };
  }

  async releaseLease(receiverId: string, version: string, owner: string): Promise<void> {
    await this.db.execute(releaseTokenLease(receiverId, version, owner));
  }
}
