import { CanActivate, ExecutionContext, Injectable, SetMetadata, createParamDecorator } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import type { FastifyRequest } from 'fastify';
import { AppError } from '../common/app.error.js';
import type { AuthenticatedKey } from './api-key.service.js';
import { KeyAuthService } from './key-auth.service.js';

const PUBLIC = 'auth:public';
const ADMIN = 'auth:admin';
/** Marks a route that needs no key (health, metrics, docs, the dashboard shell). */
export const Public = () => SetMetadata(PUBLIC, true);
/** Marks a route that needs an admin key (key management). */
export const AdminOnly = () => SetMetadata(ADMIN, true);

type KeyedRequest = FastifyRequest & { apiKey?: AuthenticatedKey };

/** The calling key, set by the authentication hook (auth.hooks.ts) or ApiKeyGuard. */
export const CurrentKey = createParamDecorator((_: unknown, ctx: ExecutionContext): AuthenticatedKey => ctx.switchToHttp().getRequest<KeyedRequest>().apiKey!);

/**
 * Global guard: every route needs `Authorization: Bearer <key>` unless @Public. The
 * key of a /v1 request is checked in the request hook, before its body is read
 * (auth.hooks.ts); here a route marked @AdminOnly refuses a plain key (403), and a
 * route the hook does not cover authenticates its key the same way (KeyAuthService:
 * 401 missing or wrong, 429 over a limit). Tenancy (404 on others' rows) is enforced
 * by the repositories, which always filter by the caller's key id.
 */
@Injectable()
export class ApiKeyGuard implements CanActivate {
  constructor(
    private readonly reflector: Reflector,
    private readonly auth: KeyAuthService,
  ) {}

  async canActivate(context: ExecutionContext): Promise<boolean> {
    const targets = [context.getHandler(), context.getClass()];
    if (this.reflector.getAllAndOverride<boolean>(PUBLIC, targets)) return true;
    const request = context.switchToHttp().getRequest<KeyedRequest>();
    const key = request.apiKey ?? (await this.auth.authenticate(request));
    if (this.reflector.getAllAndOverride<boolean>(ADMIN, targets) && !key.isAdmin) {
      throw new AppError('forbidden', 'this route needs an admin key');
    }
    request.apiKey = key;
    return true;
  }
}
