import { newSecretsKey } from '../config/secret-keyring.js';
import type { CliApi } from './api.client.js';
import { UsageError, type CliArgs } from './cli.args.js';
import type { Output } from './cli.commands.js';
import { table } from './cli.format.js';

/** `callbacks secrets new-key|keys|rotate-key`: the key signing secrets are stored under (admin key). */
export async function secrets(api: CliApi, args: CliArgs, io: Output): Promise<number> {
  const [sub] = args.positionals;
  if (sub === 'new-key') {
    io.out(newSecretsKey());
    io.err(
      'a new SECRETS_KEY (32 random bytes, base64); nothing was changed. To rotate: start every process with it as SECRETS_KEY and the old key in SECRETS_KEY_PREVIOUS, then run: callbacks secrets rotate-key\n',
    );
    return 0;
  }
  if (sub !== 'keys' && sub !== 'rotate-key') throw new UsageError('secrets needs new-key, keys or rotate-key');
  const r = sub === 'keys' ? await api.call(api.client.GET('/v1/secrets-key')) : await api.call(api.client.POST('/v1/secrets-key/reencrypt'));
  if (args.json) return (io.out(JSON.stringify(r)), 0);
  if ('reencrypted' in r) io.out(`re-encrypted ${r.reencrypted} signing secret(s) under key ${r.currentKeyId}`);
  io.out(
    table(
      ['key', 'secrets', 'state'],
      r.keys.map((k) => [
        k.keyId ?? '(plain text)',
        String(k.secrets),
        k.current ? 'current (SECRETS_KEY)' : k.held ? 'previous (SECRETS_KEY_PREVIOUS)' : 'not held',
      ]),
    ),
  );
  const old = r.keys.filter((k) => !k.current).reduce((n, k) => n + k.secrets, 0);
  if (sub === 'rotate-key' && old === 0) io.err('every signing secret is under SECRETS_KEY: SECRETS_KEY_PREVIOUS can go\n');
  return 0;
}
