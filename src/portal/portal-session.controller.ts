import { Body, Controller, Delete, HttpCode, Param, Post, Req } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import { ApiBearerAuth, ApiCreatedResponse, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import type { FastifyRequest } from 'fastify';
import type { AddressInfo } from 'node:net';
import { CurrentKey } from '../auth/api-key.guard.js';
import type { AuthenticatedKey } from '../auth/api-key.service.js';
import { ApiAuthErrors, ApiErrors } from '../common/error.dto.js';
import { serviceUrl } from '../common/service-url.js';
import { AppConfig } from '../config/app.config.js';
import { CreatePortalSessionDto, PortalSessionDto, RevokedPortalSessionsDto } from './dto/portal-session.dto.js';
import { PortalSessionService } from './portal-session.service.js';

/** The sender's side of the receiver portal: mint a session link for one receiver, revoke them all. */
@ApiTags('receivers')
@ApiBearerAuth()
@ApiAuthErrors()
@Controller('v1/receivers/:name/portal-sessions')
export class PortalSessionController {
  constructor(
    private readonly sessions: PortalSessionService,
    private readonly config: AppConfig,
    private readonly adapter: HttpAdapterHost,
  ) {}

  /** A link (and token) to the receiver's portal, scoped to it and to `capabilities`, valid `ttlSeconds`. */
  @Post()
  @ApiOperation({ summary: "Mint a session of a receiver's portal" })
  @ApiCreatedResponse({ type: PortalSessionDto })
  @ApiErrors(404, 415)
  mint(
    @CurrentKey() key: AuthenticatedKey,
    @Param('name') name: string,
    @Body() dto: CreatePortalSessionDto,
    @Req() req: FastifyRequest,
  ): Promise<PortalSessionDto> {
    return this.sessions.mintSession(key.id, name, dto, this.baseUrl(req));
  }

  /** Revokes every session of the receiver: their next request is refused. */
  @Delete()
  @HttpCode(200)
  @ApiOperation({ summary: "Revoke every session of a receiver's portal" })
  @ApiOkResponse({ type: RevokedPortalSessionsDto })
  @ApiErrors(404)
  revoke(@CurrentKey() key: AuthenticatedKey, @Param('name') name: string): Promise<RevokedPortalSessionsDto> {
    return this.sessions.revokeSessions(key.id, name);
  }

  /**
   * PORTAL_BASE_URL, else the address the service listens on (HOST and its port; with a
   * HOST of every interface, the local address the request's connection reached). Never
   * the request's Host header: whoever mints a link through a proxy, or with a forged
   * Host, would otherwise hand receivers a link to another site, token included.
   */
  private baseUrl(req: FastifyRequest): string {
    if (this.config.portalBaseUrl) return this.config.portalBaseUrl;
    const address = this.adapter.httpAdapter.getHttpServer().address() as AddressInfo | null;
    return serviceUrl(this.config.host, address?.port ?? this.config.port, req.socket.localAddress);
  }
}
