import { Controller, HttpCode, Param, Post } from '@nestjs/common';
import { ApiBearerAuth, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { CurrentKey } from '../auth/api-key.guard.js';
import type { AuthenticatedKey } from '../auth/api-key.service.js';
import { ApiAuthErrors, ApiErrors } from '../common/error.dto.js';
import { ReceiverTestDto } from '../receivers/dto/receiver-test.dto.js';
import { ReceiverTester } from '../receivers/receiver-tester.js';

@ApiTags('receivers')
@ApiBearerAuth()
@ApiAuthErrors()
@Controller('v1/receivers')
export class ReceiverTestController {
  constructor(private readonly tester: ReceiverTester) {}

  /** One signed example call to the receiver now, with its credentials; answers the attempt (status, timings, response, error). Stores nothing. */
  @Post(':name/test')
  @ApiOperation({ summary: 'Send a receiver one signed test call now' })
  @HttpCode(200)
  @ApiOkResponse({ type: ReceiverTestDto })
  @ApiErrors(404)
  test(@CurrentKey() key: AuthenticatedKey, @Param('name') name: string): Promise<ReceiverTestDto> {
    return this.tester.testReceiver(key.id, name);
  }
}
