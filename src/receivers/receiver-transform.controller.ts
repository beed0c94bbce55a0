import { Body, Controller, HttpCode, Param, Post } from '@nestjs/common';
import { ApiBearerAuth, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { CurrentKey } from '../auth/api-key.guard.js';
import type { AuthenticatedKey } from '../auth/api-key.service.js';
import { ApiAuthErrors, ApiErrors } from '../common/error.dto.js';
import { TransformTestDto, TransformTestResultDto } from '../transforms/dto/transform.dto.js';
import { ReceiverTransformService } from './receiver-transform.service.js';

@ApiTags('receivers')
@ApiBearerAuth()
@ApiAuthErrors()
@Controller('v1/receivers')
export class ReceiverTransformController {
  constructor(private readonly transforms: ReceiverTransformService) {}

  /** Runs its transform (or `code`) on `payload` or a past delivery (`callbackId`) and answers what would be sent, or the error and its line; sends nothing. */
  @Post(':name/transform/test')
  @HttpCode(200)
  @ApiOperation({ summary: "Try a receiver's transform without sending" })
  @ApiOkResponse({ type: TransformTestResultDto })
  @ApiErrors(404, 415)
  test(@CurrentKey() key: AuthenticatedKey, @Param('name') name: string, @Body() dto: TransformTestDto): Promise<TransformTestResultDto> {
    return this.transforms.testTransform(key.id, name, dto);
  }
}
