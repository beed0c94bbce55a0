import { Controller, Get, HttpCode, Param, Post, Query } from '@nestjs/common';
import { ApiAcceptedResponse, ApiBearerAuth, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { CurrentKey } from '../auth/api-key.guard.js';
import type { AuthenticatedKey } from '../auth/api-key.service.js';
import { ApiAuthErrors, ApiErrors } from '../common/error.dto.js';
import { UuidParam } from '../common/params.js';
import { ReceiverService } from '../receivers/receiver.service.js';
import { CallbackService } from './callback.service.js';
import { CallbackDetailDto, CallbackListQueryDto, CallbackPageDto } from './dto/callback.dto.js';

@ApiTags('callbacks')
@ApiBearerAuth()
@ApiAuthErrors()
@Controller('v1/callbacks')
export class CallbackController {
  constructor(
    private readonly callbacks: CallbackService,
    private readonly receivers: ReceiverService,
  ) {}

  @Get()
  @ApiOperation({ summary: 'List callbacks' })
  @ApiOkResponse({ type: CallbackPageDto })
  @ApiErrors(404)
  async list(@CurrentKey() key: AuthenticatedKey, @Query() q: CallbackListQueryDto): Promise<CallbackPageDto> {
    const receiver = q.receiver ? await this.receivers.require(key.id, q.receiver) : undefined;
    // an event's deliveries are the callbacks of its own batch
    const batchId = q.event !== undefined ? await this.callbacks.batchOfEvent(key.id, q.event) : undefined;
    return this.callbacks.listCallbacks(key.id, {
      status: q.status,
      host: q.host,
      since: q.since,
      receiverId: receiver?.id,
      batchId,
      after: q.cursor,
      limit: q.limit,
    });
  }

  @Get(':id')
  @ApiOperation({ summary: 'Get a callback with its attempts' })
  @ApiOkResponse({ type: CallbackDetailDto })
  @ApiErrors(404)
  get(@CurrentKey() key: AuthenticatedKey, @Param('id', UuidParam) id: string): Promise<CallbackDetailDto> {
    return this.callbacks.getCallback(key.id, id);
  }

  /** Sends a failed or cancelled callback again (409 in any other state). */
  @Post(':id/retry')
  @ApiOperation({ summary: 'Retry a failed or cancelled callback' })
  @HttpCode(202)
  @ApiAcceptedResponse({ type: CallbackDetailDto })
  @ApiErrors(404, 409)
  retry(@CurrentKey() key: AuthenticatedKey, @Param('id', UuidParam) id: string): Promise<CallbackDetailDto> {
    return this.callbacks.retryCallback(key.id, id);
  }

  /** Cancels a pending or in-flight callback (409 in any other state). */
  @Post(':id/cancel')
  @ApiOperation({ summary: 'Cancel a pending or in-flight callback' })
  @HttpCode(200)
  @ApiOkResponse({ type: CallbackDetailDto })
  @ApiErrors(404, 409)
  cancel(@CurrentKey() key: AuthenticatedKey, @Param('id', UuidParam) id: string): Promise<CallbackDetailDto> {
    return this.callbacks.cancelCallback(key.id, id);
  }
}
