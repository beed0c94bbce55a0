import { Body, Controller, Get, HttpCode, Param, Patch, Post, Query, UseGuards } from '@nestjs/common';
import { ApiAcceptedResponse, ApiCookieAuth, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { Public } from '../auth/api-key.guard.js';
import { CallbackDetailDto, CallbackPageDto } from '../callbacks/dto/callback.dto.js';
import { ApiErrors } from '../common/error.dto.js';
import { UuidParam } from '../common/params.js';
import { LatencyHistoryDto } from '../history/dto/latency.dto.js';
import { ReceiverTestDto } from '../receivers/dto/receiver-test.dto.js';
import { RecoveryDto } from '../recoveries/dto/recovery.dto.js';
import { TransformTestDto, TransformTestResultDto } from '../transforms/dto/transform.dto.js';
import {
  PortalDeliveryDto,
  PortalDeliveryQueryDto,
  PortalLatencyQueryDto,
  PortalReceiverDto,
  PortalReplayDto,
  PortalSecretsDto,
  PortalSessionViewDto,
  PortalSettingsDto,
} from './dto/portal.dto.js';
import { CurrentPortal, NeedsCapability, PortalGuard } from './portal.guard.js';
import { PortalSessionService, type PortalCaller } from './portal-session.service.js';
import { PortalDeliveryService } from './portal-delivery.service.js';
import { PortalReceiverService } from './portal-receiver.service.js';

export const PORTAL_AUTH = 'portal';

/**
 * The receiver portal's API: everything of one receiver, as its session allows. Not
 * under /v1 and not reachable with an API key: the session cookie (or its token as a
 * bearer) is the only credential, and it names the receiver, so no route takes one.
 */
@Public()
@UseGuards(PortalGuard)
@ApiTags('portal')
@ApiCookieAuth(PORTAL_AUTH)
@ApiErrors(400, 401, 429, 500, 503)
@Controller('portal/api')
export class PortalApiController {
  constructor(
    private readonly receiverSide: PortalReceiverService,
    private readonly deliverySide: PortalDeliveryService,
    private readonly sessions: PortalSessionService,
  ) {}

  @Get('session')
  @ApiOperation({ summary: 'The portal session: receiver, capabilities, CSRF token' })
  @ApiOkResponse({ type: PortalSessionViewDto })
  session(@CurrentPortal() p: PortalCaller): PortalSessionViewDto {
    const { receiver, capabilities, theme, returnUrl } = p;
    return { receiver, capabilities, theme, returnUrl, expiresAt: p.expiresAt.toISOString(), csrfToken: this.sessions.csrfToken(p) };
  }

  @Get('receiver')
  @ApiOperation({ summary: "The receiver's settings and figures" })
  @ApiOkResponse({ type: PortalReceiverDto })
  receiver(@CurrentPortal() p: PortalCaller): Promise<PortalReceiverDto> {
    return this.receiverSide.receiver(p);
  }

  @Patch('receiver')
  @NeedsCapability('edit')
  @ApiOperation({ summary: 'Change URL, headers, credentials (write-only) or transform, disable or enable (edit)' })
  @ApiOkResponse({ type: PortalReceiverDto })
  @ApiErrors(403, 409, 415)
  updateReceiver(@CurrentPortal() p: PortalCaller, @Body() dto: PortalSettingsDto): Promise<PortalReceiverDto> {
    return this.receiverSide.updateSettings(p, dto);
  }

  @Get('secrets')
  @ApiOperation({ summary: 'Its signing secrets (reveal)' })
  @ApiOkResponse({ type: PortalSecretsDto })
  secrets(@CurrentPortal() p: PortalCaller): Promise<PortalSecretsDto> {
    return this.receiverSide.secrets(p);
  }

  @Post('secrets/rotate')
  @HttpCode(200)
  @NeedsCapability('rotate')
  @ApiOperation({ summary: 'Rotate its signing secret (rotate); the old one signs beside it for 24 h' })
  @ApiOkResponse({ type: PortalSecretsDto })
  @ApiErrors(403)
  rotate(@CurrentPortal() p: PortalCaller): Promise<PortalSecretsDto> {
    return this.receiverSide.rotateSecret(p);
  }

  @Get('deliveries')
  @ApiOperation({ summary: 'Its deliveries, newest first' })
  @ApiOkResponse({ type: CallbackPageDto })
  deliveries(@CurrentPortal() p: PortalCaller, @Query() q: PortalDeliveryQueryDto): Promise<CallbackPageDto> {
    return this.deliverySide.deliveries(p, q);
  }

  @Get('deliveries/:id')
  @ApiOperation({ summary: 'One delivery with its attempts and the requests as sent' })
  @ApiOkResponse({ type: PortalDeliveryDto })
  @ApiErrors(404)
  delivery(@CurrentPortal() p: PortalCaller, @Param('id', UuidParam) id: string): Promise<PortalDeliveryDto> {
    return this.deliverySide.delivery(p, id);
  }

  @Post('deliveries/:id/replay')
  @HttpCode(202)
  @NeedsCapability('replay')
  @ApiOperation({ summary: 'Send a failed or cancelled delivery again (replay)' })
  @ApiAcceptedResponse({ type: CallbackDetailDto })
  @ApiErrors(403, 404, 409)
  replayOne(@CurrentPortal() p: PortalCaller, @Param('id', UuidParam) id: string): Promise<CallbackDetailDto> {
    return this.deliverySide.replayDelivery(p, id);
  }

  @Post('replays')
  @HttpCode(202)
  @NeedsCapability('replay')
  @ApiOperation({ summary: 'Send again every failed delivery since a time (replay), as a recovery' })
  @ApiAcceptedResponse({ type: RecoveryDto })
  @ApiErrors(403, 415)
  replayFailed(@CurrentPortal() p: PortalCaller, @Body() dto: PortalReplayDto): Promise<RecoveryDto> {
    return this.deliverySide.replayFailedSince(p, dto.since);
  }

  @Get('replays/:id')
  @ApiOperation({ summary: 'A replay of this receiver and its progress' })
  @ApiOkResponse({ type: RecoveryDto })
  @ApiErrors(404)
  replay(@CurrentPortal() p: PortalCaller, @Param('id', UuidParam) id: string): Promise<RecoveryDto> {
    return this.deliverySide.replay(p, id);
  }

  @Post('test')
  @HttpCode(200)
  @NeedsCapability('replay')
  @ApiOperation({ summary: 'Send a signed test call to its URL now, with its credentials, and answer the attempt (replay); nothing is stored' })
  @ApiOkResponse({ type: ReceiverTestDto })
  @ApiErrors(403)
  sendTest(@CurrentPortal() p: PortalCaller): Promise<ReceiverTestDto> {
    return this.receiverSide.sendTest(p);
  }

  @Post('transform/test')
  @HttpCode(200)
  @NeedsCapability('edit')
  @ApiOperation({ summary: 'Try its transform, or code given, on a sample or a delivery; nothing is sent (edit)' })
  @ApiOkResponse({ type: TransformTestResultDto })
  @ApiErrors(403, 404, 415)
  testTransform(@CurrentPortal() p: PortalCaller, @Body() dto: TransformTestDto): Promise<TransformTestResultDto> {
    return this.receiverSide.testTransform(p, dto);
  }

  @Get('latency')
  @ApiOperation({ summary: 'Its latency history and success per bucket' })
  @ApiOkResponse({ type: LatencyHistoryDto })
  latency(@CurrentPortal() p: PortalCaller, @Query() q: PortalLatencyQueryDto): Promise<LatencyHistoryDto> {
    return this.deliverySide.latencyHistory(p, q);
  }
}
