import { Controller, Get, Headers, Param, Query, Res } from '@nestjs/common';
import { ApiBearerAuth, ApiExtraModels, ApiOkResponse, ApiOperation, ApiTags, getSchemaPath } from '@nestjs/swagger';
import type { FastifyReply } from 'fastify';
import { CurrentKey } from '../auth/api-key.guard.js';
import type { AuthenticatedKey } from '../auth/api-key.service.js';
import { ApiAuthErrors, ApiErrors } from '../common/error.dto.js';
import { UuidParam } from '../common/params.js';
import { SequenceDto, SequenceQueryDto } from './dto/sequence.dto.js';
import { SequenceService } from './sequence.service.js';

@ApiTags('history')
@ApiBearerAuth()
@ApiAuthErrors()
@Controller('v1/batches')
export class SequenceController {
  constructor(private readonly sequence: SequenceService) {}

  /** The batch's timeline: text/plain ASCII diagram, or JSON with `?format=json` or `Accept: application/json`. */
  @Get(':id/sequence')
  @ApiOperation({ summary: "Get a batch's sequence diagram (text) or timeline (JSON)" })
  @ApiExtraModels(SequenceDto)
  @ApiOkResponse({
    description: 'One line per call `(url :: code=200, start=…, end=…, total=…)` and a bar on the batch’s time axis; or its JSON',
    content: {
      'text/plain': { schema: { type: 'string' } },
      'application/json': { schema: { $ref: getSchemaPath(SequenceDto) } },
    },
  })
  @ApiErrors(404)
  async get(
    @CurrentKey() key: AuthenticatedKey,
    @Param('id', UuidParam) id: string,
    @Query() q: SequenceQueryDto,
    @Headers('accept') accept: string | undefined,
    @Res({ passthrough: true }) reply: FastifyReply,
  ): Promise<SequenceDto | string> {
    const json = q.format === 'json' || (q.format !== 'text' && /application\/json/.test(accept ?? ''));
    const timeline = await this.sequence.timeline(key.id, id);
    if (json) return { batchId: id, ...timeline };
    void reply.header('content-type', 'text/plain; charset=utf-8');
    return this.sequence.render(timeline);
  }
}
