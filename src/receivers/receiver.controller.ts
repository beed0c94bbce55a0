import { Body, Controller, Delete, Get, HttpCode, Param, Post, Put, Query, Res } from '@nestjs/common';
import { ApiBearerAuth, ApiCreatedResponse, ApiExtraModels, ApiOkResponse, ApiOperation, ApiQuery, ApiTags } from '@nestjs/swagger';
import type { FastifyReply } from 'fastify';
import { CurrentKey } from '../auth/api-key.guard.js';
import type { AuthenticatedKey } from '../auth/api-key.service.js';
import { ApiAuthErrors, ApiErrors } from '../common/error.dto.js';
import { dateParam, pageLimit } from '../common/params.js';
import { BasicAuthDto, BearerAuthDto, OAuth2AuthDto } from '../receiver-auth/dto/credentials.dto.js';
import { PutReceiverDto } from './dto/put-receiver.dto.js';
import { DeletedReceiverDto, ReceiverDetailDto, ReceiverPageDto, ReceiverWithSecretsDto } from './dto/receiver.dto.js';
import { RECEIVER_SORTS } from './receiver-list.sql.js';
import { ReceiverService } from './receiver.service.js';

@ApiTags('receivers')
@ApiBearerAuth()
@ApiAuthErrors()
@Controller('v1/receivers')
export class ReceiverController {
  constructor(private readonly receivers: ReceiverService) {}

  /** Creates (201) or updates (200) the receiver `name`; answers it with its secrets (newest first). */
  @Put(':name')
  @ApiOperation({ summary: 'Create or update a receiver' })
  @ApiExtraModels(BasicAuthDto, BearerAuthDto, OAuth2AuthDto)
  @ApiCreatedResponse({ type: ReceiverWithSecretsDto, description: 'created' })
  @ApiOkResponse({ type: ReceiverWithSecretsDto, description: 'updated' })
  @ApiErrors(415)
  async put(
    @CurrentKey() key: AuthenticatedKey,
    @Param('name') name: string,
    @Body() dto: PutReceiverDto,
    @Res({ passthrough: true }) reply: FastifyReply,
  ): Promise<ReceiverWithSecretsDto> {
    const { created, receiver } = await this.receivers.putReceiver(key.id, name, dto);
    void reply.status(created ? 201 : 200);
    return receiver;
  }

  /** The key's receivers, each with its health (last hour): by name, or `sort=health` (failing first, the longest failing first, then by name). */
  @Get()
  @ApiOperation({ summary: 'List receivers' })
  @ApiQuery({ name: 'cursor', required: false })
  @ApiQuery({ name: 'limit', required: false })
  @ApiQuery({ name: 'sort', required: false, enum: RECEIVER_SORTS })
  @ApiOkResponse({ type: ReceiverPageDto })
  list(
    @CurrentKey() key: AuthenticatedKey,
    @Query('cursor') cursor?: string,
    @Query('limit') limit?: string,
    @Query('sort') sort?: string,
  ): Promise<ReceiverPageDto> {
    return this.receivers.listReceivers(key.id, pageLimit(limit), sort, cursor);
  }

  /** Settings, secrets and figures: pending, in flight, held, outcomes and latency since `since` (default 15 minutes ago). */
  @Get(':name')
  @ApiOperation({ summary: 'Get a receiver with its secrets and figures' })
  @ApiQuery({ name: 'since', required: false })
  @ApiOkResponse({ type: ReceiverDetailDto })
  @ApiErrors(404)
  get(@CurrentKey() key: AuthenticatedKey, @Param('name') name: string, @Query('since') since?: string): Promise<ReceiverDetailDto> {
    return this.receivers.getReceiver(key.id, name, dateParam('since', since));
  }

  /** Deletes it; its unfinished callbacks are cancelled (`cancelledCallbacks` says how many). */
  @Delete(':name')
  @ApiOperation({ summary: 'Delete a receiver and cancel its callbacks' })
  @HttpCode(200)
  @ApiOkResponse({ type: DeletedReceiverDto })
  @ApiErrors(404)
  delete(@CurrentKey() key: AuthenticatedKey, @Param('name') name: string): Promise<DeletedReceiverDto> {
    return this.receivers.deleteReceiver(key.id, name);
  }

  /** Starts signing with a new secret; the old one also signs for 24 h. */
  @Post(':name/secret/rotate')
  @ApiOperation({ summary: "Rotate a receiver's signing secret" })
  @HttpCode(200)
  @ApiOkResponse({ type: ReceiverWithSecretsDto })
  @ApiErrors(404)
  rotate(@CurrentKey() key: AuthenticatedKey, @Param('name') name: string): Promise<ReceiverWithSecretsDto> {
    return this.receivers.rotateSecret(key.id, name);
  }
}
