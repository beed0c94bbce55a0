import { Body, Controller, Get, Headers, HttpCode, Param, Post, Query, Res } from '@nestjs/common';
import { ApiAcceptedResponse, ApiBearerAuth, ApiHeader, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import type { FastifyReply } from 'fastify';
import { CurrentKey } from '../auth/api-key.guard.js';
import type { AuthenticatedKey } from '../auth/api-key.service.js';
import { CallbackService } from '../callbacks/callback.service.js';
import { CallbackPageDto } from '../callbacks/dto/callback.dto.js';
import { ApiAuthErrors, ApiErrors, ApiQuotaErrors } from '../common/error.dto.js';
import { UuidParam } from '../common/params.js';
import { traceparentOf } from '../tracing/request.tracing.js';
import { BatchService } from './batch.service.js';
import { BatchRetryDto } from '../callbacks/dto/batch-retry.dto.js';
import { AcceptedBatchDto, BatchCallbacksQueryDto, BatchDto, BatchListQueryDto, BatchPageDto, BatchRetryQueryDto } from './dto/batch.dto.js';
import { CreateBatchDto } from './dto/create-batch.dto.js';

@ApiTags('batches')
@ApiBearerAuth()
@ApiAuthErrors()
@Controller('v1/batches')
export class BatchController {
  constructor(
    private readonly batches: BatchService,
    private readonly callbacks: CallbackService,
  ) {}

  /** Stores the batch durably (one transaction) and answers 202; sending starts at once. */
  @Post()
  @ApiOperation({ summary: 'Submit a batch of callbacks' })
  @HttpCode(202)
  @ApiHeader({ name: 'Idempotency-Key', required: false, description: 'A replay with the same key and body answers the batch stored first' })
  @ApiAcceptedResponse({ type: AcceptedBatchDto, headers: { 'idempotent-replayed': { description: '`true` on a replay', schema: { type: 'string' } } } })
  @ApiErrors(409, 413, 415)
  @ApiQuotaErrors()
  async create(
    @CurrentKey() key: AuthenticatedKey,
    @Body() dto: CreateBatchDto,
    @Headers('idempotency-key') idempotencyKey: string | undefined,
    @Res({ passthrough: true }) reply: FastifyReply,
  ): Promise<AcceptedBatchDto> {
    const { replayed, ...batch } = await this.batches.acceptBatch(key.id, dto, idempotencyKey, traceparentOf(reply.request));
    if (replayed) void reply.header('idempotent-replayed', 'true');
    return batch;
  }

  @Get()
  @ApiOperation({ summary: 'List batches' })
  @ApiOkResponse({ type: BatchPageDto })
  list(@CurrentKey() key: AuthenticatedKey, @Query() q: BatchListQueryDto): Promise<BatchPageDto> {
    return this.batches.listBatches(key.id, q.limit, q.cursor);
  }

  @Get(':id')
  @ApiOperation({ summary: "Get a batch's status and counts" })
  @ApiOkResponse({ type: BatchDto })
  @ApiErrors(404)
  get(@CurrentKey() key: AuthenticatedKey, @Param('id', UuidParam) id: string): Promise<BatchDto> {
    return this.batches.getBatch(key.id, id);
  }

  @Get(':id/callbacks')
  @ApiOperation({ summary: "List a batch's callbacks" })
  @ApiOkResponse({ type: CallbackPageDto })
  @ApiErrors(404)
  async listCallbacks(@CurrentKey() key: AuthenticatedKey, @Param('id', UuidParam) id: string, @Query() q: BatchCallbacksQueryDto): Promise<CallbackPageDto> {
    await this.batches.requireBatch(key.id, id);
    return this.callbacks.listCallbacks(key.id, { batchId: id, status: q.status, after: q.cursor, limit: q.limit });
  }

  /** Sends the batch's failed (or `?status=cancelled`) callbacks again. */
  @Post(':id/retry')
  @ApiOperation({ summary: "Retry a batch's failed or cancelled callbacks" })
  @HttpCode(202)
  @ApiAcceptedResponse({ type: BatchRetryDto })
  @ApiErrors(404)
  async retry(@CurrentKey() key: AuthenticatedKey, @Param('id', UuidParam) id: string, @Query() q: BatchRetryQueryDto): Promise<BatchRetryDto> {
    await this.batches.requireBatch(key.id, id);
    return this.callbacks.retryBatch(key.id, id, q.status);
  }
}
