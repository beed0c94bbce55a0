import { Injectable } from '@nestjs/common';
import { uuidv7 } from '../common/uuid.js';
import type { SigningSecretsDto } from './dto/signing-secret.dto.js';
import { newSigningSecret } from './signature.js';
import { SigningSecretRepository, type SecretRow } from './signing-secret.repository.js';

/** How long the old secret keeps signing after a rotation (24 h). */
export const ROTATION_OVERLAP_MS = 24 * 3600 * 1000;
/** The worker re-reads secrets this often, so a rotation shows within seconds. */
const CACHE_MS = 5_000;

@Injectable()
export class SigningSecretService {
  private readonly cache = new Map<string, { secrets: string[]; until: number }>();

  constructor(private readonly secrets: SigningSecretRepository) {}

  /** The secrets to sign with for each key (newest first), cached briefly. */
  async secretsFor(apiKeyIds: Iterable<string>): Promise<Map<string, string[]>> {
    const now = Date.now();
    const result = new Map<string, string[]>();
    const missing: string[] = [];
    for (const id of new Set(apiKeyIds)) {
      const hit = this.cache.get(id);
      if (hit && hit.until > now) result.set(id, hit.secrets);
      else missing.push(id);
    }
    if (missing.length > 0) {
      let rows = await this.secrets.findLiveSecrets(missing);
      const without = missing.filter((id) => !rows.some((r) => r.apiKeyId === id));
      if (without.length > 0) rows = rows.concat(await this.ensureSecrets(without));
      for (const id of missing) {
        const secrets = rows.filter((r) => r.apiKeyId === id).map((r) => r.secret);
        this.cache.set(id, { secrets, until: now + CACHE_MS });
        result.set(id, secrets);
      }
    }
    return result;
  }

  /** Gives each of these keys a current secret if it has none; returns the secrets made. */
  async ensureSecrets(apiKeyIds: string[]): Promise<SecretRow[]> {
    return this.secrets.insertFirstSecrets(apiKeyIds.map((apiKeyId) => ({ apiKeyId, id: uuidv7(), secret: newSigningSecret() })));
  }

  async describe(apiKeyId: string): Promise<SigningSecretsDto> {
    let rows = await this.secrets.findLiveSecrets([apiKeyId]);
    if (rows.length === 0) rows = await this.ensureSecrets([apiKeyId]);
    return {
      secrets: rows.map((r) => ({ secret: r.secret, createdAt: r.createdAt.toISOString(), expiresAt: r.expiresAt?.toISOString() ?? null })),
    };
  }

  async rotate(apiKeyId: string): Promise<SigningSecretsDto> {
    await this.secrets.rotateSecret(apiKeyId, { id: uuidv7(), secret: newSigningSecret() }, ROTATION_OVERLAP_MS);
    this.cache.delete(apiKeyId);
    return this.describe(apiKeyId);
  }
}
