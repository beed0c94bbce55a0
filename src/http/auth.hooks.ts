import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { admit } from './request.admission.js';
import type { PortalAuthService } from '../portal/portal-auth.service.js';
import type { PortalCaller } from '../portal/portal-session.service.js';
import type { AuthenticatedKey } from '../auth/api-key.service.js';
import type { KeyAuthService } from '../auth/key-auth.service.js';

type AuthenticatedRequest = FastifyRequest & { apiKey?: AuthenticatedKey; portal?: PortalCaller };

/**
 * Authenticates every /v1 request (its API key) and every /portal/api request (its
 * portal session) in `onRequest`, before Fastify reads a byte of the body: a request
 * without a working credential is answered 401 (429 while its address or key prefix is
 * held off, 403 for a cookie change without its CSRF token) and its body is never
 * parsed nor kept: Node drops its bytes as they arrive, after the answer is sent, so a
 * client still uploading reads its 401 instead of a reset connection, and the
 * connection stays usable. Unknown /v1 routes are authenticated too (401 before 404).
 * Registered after the request-context, tracing and metrics hooks, so a refusal is
 * logged, traced and counted like any answer. The guards then only check what needs
 * the route's metadata: admin-only routes, portal capabilities.
 */
export function registerAuthHooks(fastify: FastifyInstance, keys: KeyAuthService, portal: PortalAuthService): void {
  fastify.addHook('onRequest', (req: FastifyRequest, _reply: FastifyReply, done: (err?: Error) => void) => {
    const path = req.routeOptions.url ?? req.url;
    const area = path.startsWith('/v1/') ? 'key' : path.startsWith('/portal/api/') ? 'portal' : undefined;
    if (!area) return done();
    const r = req as AuthenticatedRequest;
    const authenticated =
      area === 'key' ? keys.authenticate(req).then((key) => void (r.apiKey = key)) : portal.authenticate(req).then((caller) => void (r.portal = caller));
    authenticated.then(() => {
      admit(req);
      done();
    }, done);
  });
}
