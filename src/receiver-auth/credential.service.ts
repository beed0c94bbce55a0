import { Injectable } from '@nestjs/common';
import { AppError } from '../common/app.error.js';
import type { SqlRunner } from '../database/pg.statements.js';
import { authView, CredentialProblem, NO_CREDENTIALS, nextAuth, nextTls, tlsView, type Credentials } from './credential.policy.js';
import { CredentialRepository } from './credential.repository.js';
import type { ReceiverAuthDto, ReceiverTlsDto } from './dto/credentials.dto.js';

/** `auth` and `tls` of a PUT: undefined leaves them as they are, null removes one. */
export interface CredentialChange {
  auth?: unknown;
  tls?: unknown;
}

export interface CredentialsView {
  auth: ReceiverAuthDto | null;
  tls: ReceiverTlsDto | null;
}

export function toCredentialsView(c: Credentials): CredentialsView {
  return { auth: authView(c.auth) as ReceiverAuthDto | null, tls: tlsView(c.tls, c.tls?.clientKey != null) };
}

/** A receiver's credentials as the API sets and shows them (write-only secrets: credential.policy.ts). */
@Injectable()
export class CredentialService {
  constructor(private readonly credentials: CredentialRepository) {}

  /**
   * Lays the change over the receiver's stored credentials and writes them, in `tx`
   * (the receiver's own PUT transaction, so a receiver is never stored without the
   * credentials it was given). A value that does not hold is a 400 naming its field;
   * the transaction then rolls back whole.
   */
  async applyChange(tx: SqlRunner, receiverId: string, change: CredentialChange): Promise<void> {
    if (change.auth === undefined && change.tls === undefined) return;
    const stored = (await this.credentials.lockCredentials(tx, receiverId)) ?? NO_CREDENTIALS;
    let next: Credentials;
    try {
      next = {
        auth: change.auth === undefined ? stored.auth : nextAuth(change.auth, stored.auth),
        tls: change.tls === undefined ? stored.tls : nextTls(change.tls, stored.tls),
      };
    } catch (error) {
      if (error instanceof CredentialProblem) throw new AppError('validation_failed', error.message);
      throw error;
    }
    await this.credentials.replaceCredentials(tx, receiverId, next);
  }

  /** What answers show of the receiver's credentials. */
  async viewOf(receiverId: string): Promise<CredentialsView> {
    const [c] = await this.credentials.findCredentials([receiverId]);
    return toCredentialsView(c ?? NO_CREDENTIALS);
  }
}
