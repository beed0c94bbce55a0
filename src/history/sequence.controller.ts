import { Controller, Get, Headers, Param, Query, Res } from '@nestjs/common';
import { ApiBearerAuth, ApiProduces, ApiQuery, ApiTags } from '@nestjs/swagger';
import type { FastifyReply } from 'fastify';
import { CurrentKey } from '../auth/api-key.guard.js';
import type { AuthenticatedKey } from '../auth/api-key.service.js';
import { UuidParam } from '../common/params.js';
import { SequenceService } from './sequence.service.js';

@ApiTags('history')
@ApiBearerAuth()
@Controller('v1/batches')
export class SequenceController {
  constructor(private readonly sequence: SequenceService) {}

  /** The batch's timeline: text/plain ASCII diagram, or JSON with `?format=json` or `Accept: application/json`. */
  @Get(':id/sequence')
  @ApiProduces('text/plain', 'application/json')
  @ApiQuery({ name: 'format', required: false, enum: ['text', 'json'] })
  async get(
    @CurrentKey() key: AuthenticatedKey,
    @Param('id', UuidParam) id: string,
    @Query('format') format: string | undefined,
    @Headers('accept') accept: string | undefined,
    @Res({ passthrough: true }) reply: FastifyReply,
  ) {
    const json = format === 'json' || (format !== 'text' && /application\/json/.test(accept ?? ''));
    const timeline = await this.sequence.timeline(key.id, id);
    if (json) return { batchId: id, ...timeline };
    void reply.header('content-type', 'text/plain; charset=utf-8');
    return this.sequence.render(timeline);
  }
}
