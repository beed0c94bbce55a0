import { Body, Controller, Get, HttpCode, Param, Post } from '@nestjs/common';
import { ApiAcceptedResponse, ApiBearerAuth, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { CurrentKey } from '../auth/api-key.guard.js';
import type { AuthenticatedKey } from '../auth/api-key.service.js';
import { ApiAuthErrors, ApiErrors } from '../common/error.dto.js';
import { UuidParam } from '../common/params.js';
import { CreateRecoveryDto, RecoveryDto, RecoveryPreviewDto } from './dto/recovery.dto.js';
import { RecoveryService } from './recovery.service.js';

@ApiTags('recoveries')
@ApiBearerAuth()
@ApiAuthErrors()
@Controller('v1/recoveries')
export class RecoveryController {
  constructor(private readonly recoveries: RecoveryService) {}

  /** Sends the matching failed (or cancelled) callbacks again, same ids, in the background; answers with its progress so far. */
  @Post()
  @ApiOperation({ summary: 'Start a recovery: send failed callbacks again' })
  @HttpCode(202)
  @ApiAcceptedResponse({ type: RecoveryDto })
  @ApiErrors(400)
  start(@CurrentKey() key: AuthenticatedKey, @Body() body: CreateRecoveryDto): Promise<RecoveryDto> {
    return this.recoveries.startRecovery(key.id, body);
  }

  /** How many callbacks a recovery with this body would send again now; nothing is changed. */
  @Post('preview')
  @ApiOperation({ summary: 'Count what a recovery would send again' })
  @HttpCode(200)
  @ApiOkResponse({ type: RecoveryPreviewDto })
  @ApiErrors(400)
  preview(@CurrentKey() key: AuthenticatedKey, @Body() body: CreateRecoveryDto): Promise<RecoveryPreviewDto> {
    return this.recoveries.previewRecovery(key.id, body);
  }

  @Get(':id')
  @ApiOperation({ summary: "Get a recovery's progress" })
  @ApiOkResponse({ type: RecoveryDto })
  @ApiErrors(404)
  get(@CurrentKey() key: AuthenticatedKey, @Param('id', UuidParam) id: string): Promise<RecoveryDto> {
    return this.recoveries.getRecovery(key.id, id);
  }

  /** Stops a running recovery after the chunk under way; what it sent again stays sent (409 once done or cancelled). */
  @Post(':id/cancel')
  @ApiOperation({ summary: 'Cancel a running recovery' })
  @HttpCode(200)
  @ApiOkResponse({ type: RecoveryDto })
  @ApiErrors(404, 409)
  cancel(@CurrentKey() key: AuthenticatedKey, @Param('id', UuidParam) id: string): Promise<RecoveryDto> {
    return this.recoveries.cancelRecovery(key.id, id);
  }
}
