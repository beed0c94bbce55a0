import { CanActivate, ExecutionContext, Injectable, SetMetadata, createParamDecorator } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import type { FastifyRequest } from 'fastify';
import { AppError } from '../common/app.error.js';
import { ApiKeyService, AuthenticatedKey } from './api-key.service.js';
import { bearerToken } from './bearer.js';
import { RateLimitService } from './rate-limit.service.js';

const PUBLIC = 'auth:public';
const ADMIN = 'auth:admin';
/** Marks a route that needs no key (health, metrics, docs, the dashboard shell). */
export const Public = () => SetMetadata(PUBLIC, true);
/** Marks a route that needs an admin key (key management). */
export const AdminOnly = () => SetMetadata(ADMIN, true);

type KeyedRequest = FastifyRequest & { apiKey?: AuthenticatedKey };

/** The calling key, set by ApiKeyGuard. */
export const CurrentKey = createParamDecorator((_: unknown, ctx: ExecutionContext): AuthenticatedKey => ctx.switchToHttp().getRequest<KeyedRequest>().apiKey!);

/**
 * Global guard: every route needs `Authorization: Bearer <key>` unless @Public.
 * A missing or wrong key is 401; a key over its rate limit, or an address that sent
 * too many wrong keys, is 429. Tenancy (404 on others' rows) is enforced by the
 * repositories, which always filter by the caller's key id.
 */
@Injectable()
export class ApiKeyGuard implements CanActivate {
  constructor(
    private readonly reflector: Reflector,
    private readonly keys: ApiKeyService,
    private readonly limiter: RateLimitService,
  ) {}

  async canActivate(context: ExecutionContext): Promise<boolean> {
    const targets = [context.getHandler(), context.getClass()];
    if (this.reflector.getAllAndOverride<boolean>(PUBLIC, targets)) return true;
    const request = context.switchToHttp().getRequest<KeyedRequest>();
    const presented = bearerToken(request.headers.authorization);
    if (!presented) throw new AppError('unauthorized', 'missing API key: send Authorization: Bearer <key>');
    // Wrong keys cost a lookup each: an address sending many is held off before that.
    this.limiter.checkFailures(request.ip);
    const key = await this.keys.verifyKey(presented);
    if (!key) {
      this.limiter.recordFailure(request.ip);
      throw new AppError('unauthorized', 'invalid or revoked API key');
    }
    if (this.reflector.getAllAndOverride<boolean>(ADMIN, targets) && !key.isAdmin) {
      throw new AppError('forbidden', 'this route needs an admin key');
    }
    this.limiter.admit(key.id);
    request.apiKey = key;
    return true;
  }
}
