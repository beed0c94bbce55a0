import { describe, expect, it } from 'vitest';
import { newSecretsKey, SecretKeyring, UnknownSecretsKeyError } from './secret-keyring.js';

describe('SecretKeyring', () => {
  const a = newSecretsKey();
  const b = newSecretsKey();
  const secret = `whsec_${Buffer.alloc(24, 1).toString('base64')}`;

  it('should seal under the current key and open under it or a previous one', () => {
    const sealed = new SecretKeyring(a).seal('row-1', secret);
    expect(sealed.sealed).not.toContain('whsec_');
    expect(new SecretKeyring(a).open('row-1', sealed.keyId, sealed.sealed)).toBe(secret);
    expect(new SecretKeyring(b, [a]).open('row-1', sealed.keyId, sealed.sealed)).toBe(secret);
    expect(new SecretKeyring(b, [a]).seal('row-1', secret).keyId).not.toBe(sealed.keyId);
  });

  it('should not open a value moved to another row, altered, or under a key it lacks', () => {
    const ring = new SecretKeyring(a);
    const sealed = ring.seal('row-1', secret);
    expect(() => ring.open('row-2', sealed.keyId, sealed.sealed)).toThrow();
    const raw = Buffer.from(sealed.sealed, 'base64');
    raw[15] ^= 1;
    expect(() => ring.open('row-1', sealed.keyId, raw.toString('base64'))).toThrow();
    expect(() => new SecretKeyring(b).open('row-1', sealed.keyId, sealed.sealed)).toThrow(UnknownSecretsKeyError);
  });

  it('should hand back plain text stored before sealing (key id null) as it is', () => {
    expect(new SecretKeyring(a).open('row-1', null, secret)).toBe(secret);
  });
});
