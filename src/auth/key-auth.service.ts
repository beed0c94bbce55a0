import { Injectable } from '@nestjs/common';
import type { FastifyRequest } from 'fastify';
import { AppError } from '../common/app.error.js';
import { prefixOf } from './api-key.format.js';
import { ApiKeyService, type AuthenticatedKey } from './api-key.service.js';
import { bearerToken } from './bearer.js';
import { RateLimitService } from './rate-limit.service.js';

/**
 * Who a /v1 request is: the key of its `Authorization: Bearer <key>`, or an error. A
 * missing or wrong key is 401; a key over its rate limit is 429, and so is a request
 * while its address, or its key's prefix, sent too many wrong keys, unless its key
 * verified in this process before (a working key is never held back by others'
 * guesses). Runs in the request hook, before any body is read (auth.hooks.ts).
 */
@Injectable()
export class KeyAuthService {
  constructor(
    private readonly keys: ApiKeyService,
    private readonly limiter: RateLimitService,
  ) {}

  async authenticate(request: FastifyRequest): Promise<AuthenticatedKey> {
    const presented = bearerToken(request.headers.authorization);
    if (!presented) throw new AppError('unauthorized', 'missing API key: send Authorization: Bearer <key>');
    const prefix = prefixOf(presented);
    // Wrong keys cost a lookup each: an address or a prefix sending many is held off before that.
    try {
      this.limiter.checkFailures(request.ip, prefix);
    } catch (held) {
      if (!this.keys.isKnownKey(presented)) throw held;
    }
    const key = await this.keys.verifyKey(presented);
    if (!key) {
      this.limiter.recordFailure(request.ip, prefix);
      throw new AppError('unauthorized', 'invalid or revoked API key');
    }
    this.limiter.admit(key.id);
    return key;
  }
}
