import { DynamicModule, Global, Module } from '@nestjs/common';
import { SecretKeyring } from './secret-keyring.js';

/** Makes this process's SecretKeyring (loaded at start, before the database is touched) injectable everywhere. */
@Global()
@Module({})
export class KeyringModule {
  static forKeyring(keyring: SecretKeyring): DynamicModule {
    return { module: KeyringModule, providers: [{ provide: SecretKeyring, useValue: keyring }], exports: [SecretKeyring] };
  }
}
