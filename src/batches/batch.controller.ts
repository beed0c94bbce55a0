import { Body, Controller, Get, Headers, HttpCode, Param, Post, Query, Res } from '@nestjs/common';
import { ApiBearerAuth, ApiHeader, ApiQuery, ApiTags } from '@nestjs/swagger';
import type { FastifyReply } from 'fastify';
import { CurrentKey } from '../auth/api-key.guard.js';
import type { AuthenticatedKey } from '../auth/api-key.service.js';
import { statusParam } from '../callbacks/callback.controller.js';
import { CallbackService } from '../callbacks/callback.service.js';
import { CALLBACK_STATUSES } from '../callbacks/callback.status.js';
import { cursorParam, pageLimit, UuidParam } from '../common/params.js';
import { traceparentOf } from '../tracing/request.tracing.js';
import { BatchService } from './batch.service.js';
import { CreateBatchDto } from './dto/create-batch.dto.js';

@ApiTags('batches')
@ApiBearerAuth()
@Controller('v1/batches')
export class BatchController {
  constructor(
    private readonly batches: BatchService,
    private readonly callbacks: CallbackService,
  ) {}

  /** Stores the batch durably (one transaction) and answers 202; sending starts at once. */
  @Post()
  @HttpCode(202)
  @ApiHeader({ name: 'Idempotency-Key', required: false })
  async create(
    @CurrentKey() key: AuthenticatedKey,
    @Body() dto: CreateBatchDto,
    @Headers('idempotency-key') idempotencyKey: string | undefined,
    @Res({ passthrough: true }) reply: FastifyReply,
  ) {
    const { replayed, ...batch } = await this.batches.acceptBatch(key.id, dto, idempotencyKey, traceparentOf(reply.request));
    if (replayed) void reply.header('idempotent-replayed', 'true');
    return batch;
  }

  @Get()
  @ApiQuery({ name: 'cursor', required: false })
  @ApiQuery({ name: 'limit', required: false })
  list(@CurrentKey() key: AuthenticatedKey, @Query('cursor') cursor?: string, @Query('limit') limit?: string) {
    return this.batches.listBatches(key.id, pageLimit(limit, 50, 500), cursorParam(cursor));
  }

  @Get(':id')
  get(@CurrentKey() key: AuthenticatedKey, @Param('id', UuidParam) id: string) {
    return this.batches.getBatch(key.id, id);
  }

  @Get(':id/callbacks')
  @ApiQuery({ name: 'status', required: false, enum: CALLBACK_STATUSES })
  @ApiQuery({ name: 'cursor', required: false })
  @ApiQuery({ name: 'limit', required: false })
  async listCallbacks(@CurrentKey() key: AuthenticatedKey, @Param('id', UuidParam) id: string, @Query() q: Record<string, string>) {
    await this.batches.requireBatch(key.id, id);
    return this.callbacks.listCallbacks(key.id, { batchId: id, status: statusParam(q.status), after: cursorParam(q.cursor), limit: pageLimit(q.limit) });
  }

  /** Sends the batch's failed (or `?status=cancelled`) callbacks again. */
  @Post(':id/retry')
  @HttpCode(202)
  @ApiQuery({ name: 'status', required: false, enum: ['failed', 'cancelled'] })
  async retry(@CurrentKey() key: AuthenticatedKey, @Param('id', UuidParam) id: string, @Query('status') status?: string) {
    await this.batches.requireBatch(key.id, id);
    const statuses = (status ?? 'failed').split(',').map((s) => statusParam(s)!);
    return this.callbacks.retryBatch(key.id, id, statuses.filter((s) => s === 'failed' || s === 'cancelled'));
  }
}
