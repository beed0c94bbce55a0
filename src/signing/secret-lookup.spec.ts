import { describe, expect, it } from 'vitest';
import { SecretLookup } from './signing-secret.service.js';

describe('SecretLookup', () => {
  const lookup = () =>
    new SecretLookup(
      new Map([
        ['receiver-1', ['whsec_r1']], // a receiver's by its id itself
        ['d key-1 http://a.example', ['whsec_a']],
        ['d key-1 http://b.example', ['whsec_b']],
        ['d key-2 http://a.example', ['whsec_k2a']],
      ]),
    );

  it("should give each callback its own receiver's or destination's secrets, however the rows alternate", () => {
    const l = lookup();
    const refs = [
      { receiverId: null, apiKeyId: 'key-1', host: 'http://a.example' },
      { receiverId: null, apiKeyId: 'key-1', host: 'http://a.example' },
      { receiverId: 'receiver-1', apiKeyId: 'key-1', host: 'http://a.example' },
      { receiverId: null, apiKeyId: 'key-1', host: 'http://b.example' },
      { receiverId: null, apiKeyId: 'key-2', host: 'http://a.example' },
      { receiverId: null, apiKeyId: 'key-1', host: 'http://a.example' },
      { receiverId: 'receiver-1', apiKeyId: 'key-2', host: 'http://b.example' },
    ];
    expect(refs.map((r) => l.secretsOf(r))).toEqual([['whsec_a'], ['whsec_a'], ['whsec_r1'], ['whsec_b'], ['whsec_k2a'], ['whsec_a'], ['whsec_r1']]);
  });

  it('should give nothing for a receiver or destination it was not given', () => {
    const l = lookup();
    expect(l.secretsOf({ receiverId: null, apiKeyId: 'key-1', host: 'http://a.example' })).toEqual(['whsec_a']);
    expect(l.secretsOf({ receiverId: 'receiver-2', apiKeyId: 'key-1', host: 'http://a.example' })).toEqual([]);
    expect(l.secretsOf({ receiverId: null, apiKeyId: 'key-3', host: 'http://a.example' })).toEqual([]);
  });
});
