import { Controller, Get, HttpCode, Param, Post, Query } from '@nestjs/common';
import { ApiBearerAuth, ApiQuery, ApiTags } from '@nestjs/swagger';
import { CurrentKey } from '../auth/api-key.guard.js';
import type { AuthenticatedKey } from '../auth/api-key.service.js';
import { cursorParam, dateParam, optionalDestinationParam, pageLimit, statusParam, UuidParam } from '../common/params.js';
import { ReceiverService } from '../receivers/receiver.service.js';
import { CallbackService } from './callback.service.js';
import { CALLBACK_STATUSES } from '../common/states.js';

@ApiTags('callbacks')
@ApiBearerAuth()
@Controller('v1/callbacks')
export class CallbackController {
  constructor(
    private readonly callbacks: CallbackService,
    private readonly receivers: ReceiverService,
  ) {}

  @Get()
  @ApiQuery({ name: 'status', required: false, enum: CALLBACK_STATUSES })
  @ApiQuery({ name: 'host', required: false, description: 'scheme://host:port' })
  @ApiQuery({ name: 'since', required: false })
  @ApiQuery({ name: 'receiver', required: false, description: 'a receiver name of your key' })
  @ApiQuery({ name: 'cursor', required: false })
  @ApiQuery({ name: 'limit', required: false })
  async list(@CurrentKey() key: AuthenticatedKey, @Query() q: Record<string, string>) {
    const receiver = q.receiver ? await this.receivers.require(key.id, q.receiver) : undefined;
    return this.callbacks.listCallbacks(key.id, {
      status: statusParam(q.status), host: optionalDestinationParam('host', q.host), since: dateParam('since', q.since),
      receiverId: receiver?.id, after: cursorParam(q.cursor), limit: pageLimit(q.limit),
    });
  }

  @Get(':id')
  get(@CurrentKey() key: AuthenticatedKey, @Param('id', UuidParam) id: string) {
    return this.callbacks.getCallback(key.id, id);
  }

  @Post(':id/retry')
  @HttpCode(202)
  retry(@CurrentKey() key: AuthenticatedKey, @Param('id', UuidParam) id: string) {
    return this.callbacks.retryCallback(key.id, id);
  }

  @Post(':id/cancel')
  @HttpCode(200)
  cancel(@CurrentKey() key: AuthenticatedKey, @Param('id', UuidParam) id: string) {
    return this.callbacks.cancelCallback(key.id, id);
  }
}
