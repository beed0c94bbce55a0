import { Injectable } from '@nestjs/common';
import type { FastifyRequest } from 'fastify';
import { bearerToken } from '../auth/bearer.js';
import { RateLimitService } from '../auth/rate-limit.service.js';
import { PortalSessionService, refused, type PortalCaller } from './portal-session.service.js';
import { CSRF_HEADER, PORTAL_COOKIE, cookieValue } from './portal-token.policy.js';

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/**
 * Who a /portal/api request is: the session of the portal cookie (a browser) or of
 * `Authorization: Bearer cbp_…` (a script), or a 401. A cookie rides along on any
 * request the browser makes to this origin, so with it every change also needs the
 * session's CSRF token in `x-csrf-token`, which only a page of this origin can read (403
 * without); a bearer token is never sent by the browser on its own, so it needs none.
 * Wrong tokens count against the address as wrong API keys do, and an address holding
 * too many gets 429 for tokens this service did not sign; one it signed is checked
 * against its session row whatever the address did. A session's requests count against
 * its key's rate limit. Runs in the request hook, before any body is read (auth.hooks.ts).
 */
@Injectable()
export class PortalAuthService {
  constructor(
    private readonly sessions: PortalSessionService,
    private readonly limiter: RateLimitService,
  ) {}

  async authenticate(request: FastifyRequest): Promise<PortalCaller> {
    const bearer = bearerToken(request.headers.authorization);
    const token = bearer ?? cookieValue(request.headers.cookie, PORTAL_COOKIE);
    const claims = this.sessions.signedClaims(token);
    if (!claims) {
      this.limiter.checkFailures(request.ip);
      this.limiter.recordFailure(request.ip);
      throw refused();
    }
    const caller = await this.sessions.callerOf(claims).catch((error: unknown) => {
      this.limiter.recordFailure(request.ip);
      throw error;
    });
    if (!bearer && !SAFE_METHODS.has(request.method)) this.sessions.checkCsrf(caller, request.headers[CSRF_HEADER]);
    this.limiter.admit(caller.apiKeyId);
    return caller;
  }
}
