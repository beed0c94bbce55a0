import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CredentialRepository } from '../../src/receiver-auth/credential.repository.js';
import { newSecretsKey } from '../../src/config/secret-keyring.js';
import { TestCertificates } from '../support/certificates.js';
import { useTestDatabase } from '../support/database.js';
import { dumpText } from '../support/dump.js';
import { Receiver } from '../support/receiver.js';
import { startTestService, waitFor, type TestService } from '../support/service.js';

/** Receivers' credentials at rest (issue 55): sealed under SECRETS_KEY, refused under a key that cannot open them, re-sealed by the key rotation. */
describe(`${CredentialRepository.name} at rest`, () => {
  const t = useTestDatabase();
  const keyA = newSecretsKey();
  const keyB = newSecretsKey();
  const certs = new TestCertificates();
  const password = 'at-rest-password-0123456789';
  let receiver: Receiver;

  beforeAll(async () => {
    receiver = await Receiver.start({ host: '127.0.0.83' });
  });
  afterAll(async () => {
    await receiver?.close();
    certs.remove();
  });

  async function deliver(service: TestService): Promise<string | undefined> {
    const res = await service.apiJson('/v1/batches', { method: 'POST', json: { callbacks: [{ receiver: 'rest-1', body: {} }] } });
    const id = res.callbacks[0].id as string;
    await waitFor(async () => (await service.apiJson(`/v1/callbacks/${id}`)).status === 'succeeded');
    return receiver.byId(id)[0].headers.authorization;
  }

  it('should keep credentials sealed, open them under SECRETS_KEY_PREVIOUS, and re-seal them with rotate-key', async () => {
    const ca = certs.authority('rest-ca');
    const client = certs.signed(ca, 'rest-client', { clientAuth: true });
    const expected = `Basic ${Buffer.from(`u:${password}`).toString('base64')}`;
    let service = await startTestService({ secretsKey: keyA }, t.url);
    try {
      const res = await service.api('/v1/receivers/rest-1', {
        method: 'PUT',
        json: { url: `${receiver.url}/rest`, auth: { type: 'basic', username: 'u', password }, tls: { clientCertificate: client.cert, clientKey: client.key } },
      });
      expect(res.status).toBe(201);
      expect(await deliver(service)).toBe(expected);
      const data = await dumpText(t.db, t.url);
      expect(data).toContain(client.cert.split('\n')[1]); // the certificate is stored as it is (it is no secret), the key is not
      expect(data).not.toContain(password);
      expect(data).not.toContain(client.key.split('\n')[1]);
    } finally {
      await service.stop();
    }
    await expect(startTestService({ secretsKey: keyB }, t.url)).rejects.toThrow(/neither SECRETS_KEY nor SECRETS_KEY_PREVIOUS/);

    service = await startTestService({ secretsKey: keyB, secretsKeyPrevious: [keyA] }, t.url);
    try {
      expect(await deliver(service)).toBe(expected);
      const done = await service.apiJson('/v1/secrets-key/reencrypt', { method: 'POST' });
      // one signing secret and the receiver's credentials
      expect(done.reencrypted).toBe(2);
      expect(done.keys).toEqual([{ keyId: done.currentKeyId, secrets: 2, current: true, held: true }]);
    } finally {
      await service.stop();
    }
    service = await startTestService({ secretsKey: keyB }, t.url);
    try {
      expect(await deliver(service)).toBe(expected);
      expect((await service.apiJson('/v1/receivers/rest-1')).auth).toEqual({ type: 'basic', username: 'u', password: 'set' });
    } finally {
      await service.stop();
    }
  });
});
