import { CanActivate, ExecutionContext, Injectable, SetMetadata, createParamDecorator } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import type { FastifyRequest } from 'fastify';
import { bearerToken } from '../auth/bearer.js';
import { RateLimitService } from '../auth/rate-limit.service.js';
import { PortalSessionService, type PortalCaller } from './portal-session.service.js';
import { CSRF_HEADER, PORTAL_COOKIE, cookieValue, type PortalCapability } from './portal-token.policy.js';

const CAPABILITY = 'portal:capability';
/** The capability a portal route needs besides `read`. */
export const NeedsCapability = (capability: PortalCapability) => SetMetadata(CAPABILITY, capability);

type PortalRequest = FastifyRequest & { portal?: PortalCaller };

/** The portal session of the request, set by PortalGuard. */
export const CurrentPortal = createParamDecorator((_: unknown, ctx: ExecutionContext): PortalCaller => ctx.switchToHttp().getRequest<PortalRequest>().portal!);

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/**
 * Guards /portal/api: the session comes from the portal cookie (a browser) or
 * `Authorization: Bearer cbp_…` (a script). A cookie rides along on any request the
 * browser makes to this origin, so with it every change also needs the session's CSRF
 * token in `x-csrf-token`, which only a page of this origin can read. A bearer token is
 * never sent by the browser on its own, so it needs none. Wrong tokens count against
 * the address as wrong API keys do; a session's requests against its key's rate limit.
 */
@Injectable()
export class PortalGuard implements CanActivate {
  constructor(
    private readonly reflector: Reflector,
    private readonly sessions: PortalSessionService,
    private readonly limiter: RateLimitService,
  ) {}

  async canActivate(context: ExecutionContext): Promise<boolean> {
    const request = context.switchToHttp().getRequest<PortalRequest>();
    const bearer = bearerToken(request.headers.authorization);
    const token = bearer ?? cookieValue(request.headers.cookie, PORTAL_COOKIE);
    this.limiter.checkFailures(request.ip);
    const caller = await this.sessions.authenticate(token).catch((error: unknown) => {
      this.limiter.recordFailure(request.ip);
      throw error;
    });
    if (!bearer && !SAFE_METHODS.has(request.method)) this.sessions.checkCsrf(caller, request.headers[CSRF_HEADER]);
    const needs = this.reflector.getAllAndOverride<PortalCapability | undefined>(CAPABILITY, [context.getHandler(), context.getClass()]);
    if (needs) this.sessions.require(caller, needs);
    // A portal's requests count against its key's rate limit, as the key's own do.
    this.limiter.admit(caller.apiKeyId);
    request.portal = caller;
    return true;
  }
}
