import { Injectable, Logger } from '@nestjs/common';
import { ApiDatabase } from '../database/api-database.js';
import { countSecretsPerKey, resealSecrets } from './secret-reseal.js';
import { SecretKeyring } from '../config/secret-keyring.js';
import type { ReencryptedDto, SecretsKeyDto } from './dto/secrets-key.dto.js';

/** The key rotation's online half: which keys seal the stored secrets, and re-sealing them under SECRETS_KEY. */
@Injectable()
export class SecretsKeyService {
  private readonly logger = new Logger(SecretsKeyService.name);

  constructor(
    private readonly db: ApiDatabase,
    private readonly keyring: SecretKeyring,
  ) {}

  async describe(): Promise<SecretsKeyDto> {
    const counts = await countSecretsPerKey(this.db);
    return {
      currentKeyId: this.keyring.currentId,
      keys: counts.map((c) => ({
        keyId: c.keyId,
        secrets: c.secrets,
        current: c.keyId === this.keyring.currentId,
        held: c.keyId === null || this.keyring.holds(c.keyId),
      })),
    };
  }

  /**
   * Seals every secret not under SECRETS_KEY under it, 1,000 per transaction, while
   * the service keeps running: every process must already hold both keys (the new one
   * as SECRETS_KEY, the old in SECRETS_KEY_PREVIOUS), or one that lacks the new key
   * cannot sign the callbacks whose secrets were re-sealed.
   */
  async reencrypt(): Promise<ReencryptedDto> {
    const reencrypted = await resealSecrets(this.db, this.keyring, {
      plainTextOnly: false,
      onChunk: (n) => this.logger.log(`re-encrypting signing secrets under key ${this.keyring.currentId}: ${n} so far`),
    });
    this.logger.log(`re-encrypted ${reencrypted} signing secrets under key ${this.keyring.currentId}`);
    return { reencrypted, ...(await this.describe()) };
  }
}
