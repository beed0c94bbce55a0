import { Controller, Get, Param, Query, Req, Res } from '@nestjs/common';
import { ApiExcludeController } from '@nestjs/swagger';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { Public } from '../auth/api-key.guard.js';
import { notFound } from '../common/app.error.js';
import { AppConfig } from '../config/app.config.js';
import { assetsDir, loadAssets, type DashboardAsset } from '../dashboard/dashboard.assets.js';
import { PortalSessionService } from './portal-session.service.js';
import { portalCookie } from './portal-token.policy.js';

/**
 * The dashboard's files the portal pages also use: its styles, element builder,
 * confirm buttons, latency chart and formatting. api.js comes along for its ApiError
 * (latency.view.js and actions.js import it); the portal never sends an API key.
 */
const SHARED = [
  'style.css',
  'dom.js',
  'api.js',
  'actions.js',
  'latency.view.js',
  'timeline.js',
  'id-link.js',
  'ids.js',
  'tooltip.js',
  'transform.panel.js',
  'favicon.svg',
];

/**
 * The portal's pages: static HTML, CSS and ES modules, as the dashboard's. They hold no
 * data; the page reads everything from /portal/api with the session cookie.
 * `GET /portal/session?token=` trades a token for that cookie and redirects to the page,
 * so the token leaves the address bar (and history: a redirect is not an entry) at once.
 */
@Public()
@ApiExcludeController()
@Controller('portal')
export class PortalPagesController {
  private readonly assets: Map<string, DashboardAsset>;
  private readonly headers: Record<string, string>;

  constructor(
    private readonly sessions: PortalSessionService,
    private readonly config: AppConfig,
  ) {
    const dashboard = loadAssets();
    this.assets = loadAssets(assetsDir(undefined, 'portal'));
    for (const name of SHARED) if (!this.assets.has(name)) this.assets.set(name, dashboard.get(name)!);
    this.headers = portalHeaders(config.portalFrameAncestors);
  }

  @Get()
  index(@Res() reply: FastifyReply): FastifyReply {
    return this.send(reply, this.assets.get('index.html')!);
  }

  @Get('session')
  async session(@Query('token') token: string | undefined, @Query('theme') theme: string | undefined, @Req() req: FastifyRequest, @Res() reply: FastifyReply) {
    const caller = await this.sessions.authenticate(token);
    const secure = req.protocol === 'https' || (this.config.portalBaseUrl ?? '').startsWith('https:');
    const maxAge = (caller.expiresAt.getTime() - Date.now()) / 1000;
    const cookie = portalCookie(token!, maxAge, { secure, embeddable: this.config.portalFrameAncestors.length > 0 });
    const next = theme === 'dark' || theme === 'light' ? `/portal?theme=${theme}` : '/portal';
    return reply.headers(this.headers).header('set-cookie', cookie).redirect(next, 303);
  }

  @Get(':file')
  file(@Param('file') file: string, @Res() reply: FastifyReply): FastifyReply {
    const asset = this.assets.get(file);
    if (!asset) throw notFound('portal file');
    return this.send(reply, asset);
  }

  private send(reply: FastifyReply, asset: DashboardAsset): FastifyReply {
    return reply.headers(this.headers).header('content-type', asset.contentType).send(asset.body);
  }
}

/**
 * The dashboard's strict policy, except who may frame the pages: the origins of
 * PORTAL_FRAME_ANCESTORS, or nobody. X-Frame-Options (which cannot name an origin) is
 * DENY when nobody may, and left out when some may: a browser that knows CSP uses
 * frame-ancestors and ignores it anyway.
 */
export function portalHeaders(ancestors: readonly string[]): Record<string, string> {
  const frameAncestors = ancestors.length > 0 ? ancestors.join(' ') : "'none'";
  return {
    'content-security-policy':
      "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; " +
      `object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors ${frameAncestors}`,
    'x-content-type-options': 'nosniff',
    'referrer-policy': 'no-referrer',
    ...(ancestors.length === 0 && { 'x-frame-options': 'DENY' }),
    'cache-control': 'no-cache',
  };
}
