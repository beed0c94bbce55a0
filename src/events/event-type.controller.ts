import { Body, Controller, Delete, Get, HttpCode, Param, Put, Query, Res } from '@nestjs/common';
import { ApiBearerAuth, ApiCreatedResponse, ApiOkResponse, ApiOperation, ApiQuery, ApiTags } from '@nestjs/swagger';
import type { FastifyReply } from 'fastify';
import { CurrentKey } from '../auth/api-key.guard.js';
import type { AuthenticatedKey } from '../auth/api-key.service.js';
import { ApiAuthErrors, ApiErrors } from '../common/error.dto.js';
import { pageLimit } from '../common/params.js';
import { DeletedEventTypeDto, EventTypeDto, EventTypePageDto, PutEventTypeDto } from './dto/event-type.dto.js';
import { EventTypeService } from './event-type.service.js';

@ApiTags('events')
@ApiBearerAuth()
@ApiAuthErrors()
@Controller('v1/event-types')
export class EventTypeController {
  constructor(private readonly types: EventTypeService) {}

  /** Creates (201) or updates (200) the type `name`; a `schema` that is not valid JSON Schema (2020-12) is a 400. */
  @Put(':name')
  @ApiOperation({ summary: 'Create or update an event type' })
  @ApiCreatedResponse({ type: EventTypeDto, description: 'created' })
  @ApiOkResponse({ type: EventTypeDto, description: 'updated' })
  @ApiErrors(413, 415)
  async put(
    @CurrentKey() key: AuthenticatedKey,
    @Param('name') name: string,
    @Body() dto: PutEventTypeDto,
    @Res({ passthrough: true }) reply: FastifyReply,
  ): Promise<EventTypeDto> {
    const { created, type } = await this.types.putEventType(key.id, name, dto);
    void reply.status(created ? 201 : 200);
    return type;
  }

  /** The key's event types in name order; `nextCursor` is the last name of the page. */
  @Get()
  @ApiOperation({ summary: 'List event types' })
  @ApiQuery({ name: 'cursor', required: false })
  @ApiQuery({ name: 'limit', required: false })
  @ApiOkResponse({ type: EventTypePageDto })
  list(@CurrentKey() key: AuthenticatedKey, @Query('cursor') cursor?: string, @Query('limit') limit?: string): Promise<EventTypePageDto> {
    return this.types.listEventTypes(key.id, pageLimit(limit), cursor || undefined);
  }

  @Get(':name')
  @ApiOperation({ summary: 'Get an event type' })
  @ApiOkResponse({ type: EventTypeDto })
  @ApiErrors(404)
  get(@CurrentKey() key: AuthenticatedKey, @Param('name') name: string): Promise<EventTypeDto> {
    return this.types.getEventType(key.id, name);
  }

  /** Deletes it: events of it can no longer be published; those published stay, with their type's name. */
  @Delete(':name')
  @ApiOperation({ summary: 'Delete an event type' })
  @HttpCode(200)
  @ApiOkResponse({ type: DeletedEventTypeDto })
  @ApiErrors(404)
  delete(@CurrentKey() key: AuthenticatedKey, @Param('name') name: string): Promise<DeletedEventTypeDto> {
    return this.types.deleteEventType(key.id, name);
  }
}
