import { Injectable } from '@nestjs/common';
import { uuidv7 } from '../common/uuid.js';
import { SigningSecretService } from '../signing/signing-secret.service.js';
import { TransformService, type ReceiverTransform } from '../transforms/transform.service.js';
import { CredentialCache, type SendCredentials } from './auth/credential.cache.js';
import type { ClaimedCallback } from './claim.repository.js';

/**
 * A claimed callback with its signing secrets (its receiver's, or its destination's),
 * its receiver's credentials and its receiver's transform when it has one
 * (src/transforms), looked up once per claim.
 */
export type QueuedCallback = ClaimedCallback & { secrets: readonly string[]; credentials: SendCredentials | null; transform?: ReceiverTransform };

/**
 * What claimed rows need before they are sent: their signing secrets, their
 * receivers' credentials and transforms, looked up once per claim, before anything
 * starts, so each send stays synchronous to build.
 */
@Injectable()
export class CallPreparation {
  constructor(
    private readonly signing: SigningSecretService,
    private readonly credentials: CredentialCache,
    private readonly transforms: TransformService,
  ) {}

  /** The rows, each given what it is sent with (the same objects). */
  async prepare(rows: ClaimedCallback[]): Promise<QueuedCallback[]> {
    const [secrets, credentials, transforms] = await Promise.all([
      this.signing.secretsFor(rows),
      this.credentials.credentialsFor(rows),
      this.transforms.transformsFor(rows),
    ]);
    return rows.map((row) => {
      const own = row.receiverId === null ? null : (credentials.get(row.receiverId) ?? null);
      const transform = row.receiverId === null ? undefined : transforms.get(row.receiverId);
      return Object.assign(row, { secrets: secrets.secretsOf(row), credentials: own, transform });
    });
  }

  /** Runs each lookup once on ids nothing has, so the first real claim's are not cold ones. */
  async warmUp(): Promise<void> {
    await this.signing.secretsFor([{ receiverId: uuidv7(), apiKeyId: uuidv7(), host: '' }]);
    await this.transforms.transformsFor([{ receiverId: uuidv7() }]);
    await this.credentials.credentialsFor([{ receiverId: uuidv7() }]);
  }
}
