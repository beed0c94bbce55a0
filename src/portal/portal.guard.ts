import { CanActivate, ExecutionContext, Injectable, SetMetadata, createParamDecorator } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import type { FastifyRequest } from 'fastify';
import { PortalAuthService } from './portal-auth.service.js';
import { PortalSessionService, type PortalCaller } from './portal-session.service.js';
import type { PortalCapability } from './portal-token.policy.js';

const CAPABILITY = 'portal:capability';
/** The capability a portal route needs besides `read`. */
export const NeedsCapability = (capability: PortalCapability) => SetMetadata(CAPABILITY, capability);

type PortalRequest = FastifyRequest & { portal?: PortalCaller };

/** The portal session of the request, set by the authentication hook (auth.hooks.ts) or PortalGuard. */
export const CurrentPortal = createParamDecorator((_: unknown, ctx: ExecutionContext): PortalCaller => ctx.switchToHttp().getRequest<PortalRequest>().portal!);

/**
 * Guards /portal/api. The session (cookie or bearer token, with its CSRF token for a
 * change made with the cookie) is checked in the request hook, before any body is read
 * (PortalAuthService); here a route's capability is required (403 without), and a
 * request the hook did not cover is authenticated the same way.
 */
@Injectable()
export class PortalGuard implements CanActivate {
  constructor(
    private readonly reflector: Reflector,
    private readonly auth: PortalAuthService,
    private readonly sessions: PortalSessionService,
  ) {}

  async canActivate(context: ExecutionContext): Promise<boolean> {
    const request = context.switchToHttp().getRequest<PortalRequest>();
    const caller = request.portal ?? (await this.auth.authenticate(request));
    const needs = this.reflector.getAllAndOverride<PortalCapability | undefined>(CAPABILITY, [context.getHandler(), context.getClass()]);
    if (needs) this.sessions.require(caller, needs);
    request.portal = caller;
    return true;
  }
}
