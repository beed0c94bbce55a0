import { Body, Controller, Get, HttpCode, Param, Post, Query, Res } from '@nestjs/common';
import { ApiAcceptedResponse, ApiBearerAuth, ApiOkResponse, ApiOperation, ApiQuery, ApiTags } from '@nestjs/swagger';
import type { FastifyReply } from 'fastify';
import { CurrentKey } from '../auth/api-key.guard.js';
import type { AuthenticatedKey } from '../auth/api-key.service.js';
import { ApiAuthErrors, ApiErrors, ApiQuotaErrors } from '../common/error.dto.js';
import { cursorParam, dateParam, pageLimit } from '../common/params.js';
import { traceparentOf } from '../tracing/request.tracing.js';
import { AcceptedEventDto, EventDetailDto, EventPageDto, PublishEventDto } from './dto/event.dto.js';
import { EventPreviewDto, PreviewEventDto } from './dto/event-preview.dto.js';
import { EventService } from './event.service.js';

@ApiTags('events')
@ApiBearerAuth()
@ApiAuthErrors()
@Controller('v1/events')
export class EventController {
  constructor(private readonly events: EventService) {}

  /** Publishes the event: one callback per subscribed receiver that takes it, stored with it in one transaction; sending starts at once. */
  @Post()
  @ApiOperation({ summary: 'Publish an event to the receivers subscribed to its type' })
  @HttpCode(202)
  @ApiAcceptedResponse({ type: AcceptedEventDto, headers: { 'idempotent-replayed': { description: '`true` on a replay', schema: { type: 'string' } } } })
  @ApiErrors(409, 413, 415)
  @ApiQuotaErrors()
  async publish(@CurrentKey() key: AuthenticatedKey, @Body() dto: PublishEventDto, @Res({ passthrough: true }) reply: FastifyReply): Promise<AcceptedEventDto> {
    const { replayed, ...event } = await this.events.publishEvent(key.id, dto, traceparentOf(reply.request));
    if (replayed) void reply.header('idempotent-replayed', 'true');
    return event;
  }

  /** Who would get this event and who would not, and why (not subscribed, filter fails, disabled, no url, a payload its schema refuses); stores and sends nothing. */
  @Post('preview')
  @ApiOperation({ summary: 'Preview who would get an event, and why' })
  @HttpCode(200)
  @ApiOkResponse({ type: EventPreviewDto })
  @ApiErrors(415)
  preview(@CurrentKey() key: AuthenticatedKey, @Body() dto: PreviewEventDto): Promise<EventPreviewDto> {
    return this.events.previewEvent(key.id, dto);
  }

  /** The key's events, newest first; `type` narrows to one type, `since` to those published since then. */
  @Get()
  @ApiOperation({ summary: 'List events' })
  @ApiQuery({ name: 'type', required: false })
  @ApiQuery({ name: 'since', required: false })
  @ApiQuery({ name: 'cursor', required: false })
  @ApiQuery({ name: 'limit', required: false })
  @ApiOkResponse({ type: EventPageDto })
  list(
    @CurrentKey() key: AuthenticatedKey,
    @Query('type') type?: string,
    @Query('since') since?: string,
    @Query('cursor') cursor?: string,
    @Query('limit') limit?: string,
  ): Promise<EventPageDto> {
    return this.events.listEvents(key.id, { type: type || undefined, since: dateParam('since', since), cursor: cursorParam(cursor), limit: pageLimit(limit) });
  }

  /** The event with its deliveries: receiver, status, attempts and last error of each (the first 1,000). */
  @Get(':id')
  @ApiOperation({ summary: 'Get an event with its deliveries' })
  @ApiOkResponse({ type: EventDetailDto })
  @ApiErrors(404)
  get(@CurrentKey() key: AuthenticatedKey, @Param('id') id: string): Promise<EventDetailDto> {
    return this.events.getEvent(key.id, id);
  }
}
