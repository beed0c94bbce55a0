import { Body, Controller, Delete, Get, HttpCode, Post, Put, Res } from '@nestjs/common';
import { ApiBearerAuth, ApiCreatedResponse, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import type { FastifyReply } from 'fastify';
import { CurrentKey } from '../auth/api-key.guard.js';
import type { AuthenticatedKey } from '../auth/api-key.service.js';
import { ApiAuthErrors, ApiErrors } from '../common/error.dto.js';
import { DeletedOperatorEndpointDto, OperatorEndpointDto, PutOperatorEndpointDto } from './dto/operator-endpoint.dto.js';
import { OperatorEndpointService } from './operator-endpoint.service.js';

@ApiTags('operator events')
@ApiBearerAuth()
@ApiAuthErrors()
@Controller('v1/operator-endpoint')
export class OperatorEndpointController {
  constructor(private readonly endpoints: OperatorEndpointService) {}

  /** Creates (201) or updates (200) the key's operator endpoint; answers it with its secrets (newest first). */
  @Put()
  @ApiOperation({ summary: 'Set the operator endpoint: where this key’s operator events go' })
  @ApiCreatedResponse({ type: OperatorEndpointDto, description: 'created' })
  @ApiOkResponse({ type: OperatorEndpointDto, description: 'updated' })
  @ApiErrors(409, 415)
  async put(
    @CurrentKey() key: AuthenticatedKey,
    @Body() dto: PutOperatorEndpointDto,
    @Res({ passthrough: true }) reply: FastifyReply,
  ): Promise<OperatorEndpointDto> {
    const { created, endpoint } = await this.endpoints.putEndpoint(key.id, dto);
    void reply.status(created ? 201 : 200);
    return endpoint;
  }

  @Get()
  @ApiOperation({ summary: 'Get the operator endpoint' })
  @ApiOkResponse({ type: OperatorEndpointDto })
  @ApiErrors(404)
  get(@CurrentKey() key: AuthenticatedKey): Promise<OperatorEndpointDto> {
    return this.endpoints.getEndpoint(key.id);
  }

  /** Stops the key's operator events at once; those not yet delivered are cancelled. */
  @Delete()
  @ApiOperation({ summary: 'Delete the operator endpoint' })
  @ApiOkResponse({ type: DeletedOperatorEndpointDto })
  @ApiErrors(404)
  delete(@CurrentKey() key: AuthenticatedKey): Promise<DeletedOperatorEndpointDto> {
    return this.endpoints.deleteEndpoint(key.id);
  }

  /** A new secret signs at once; the old one signs beside it for 24 h. */
  @Post('secret/rotate')
  @HttpCode(200)
  @ApiOperation({ summary: 'Rotate the operator endpoint’s signing secret' })
  @ApiOkResponse({ type: OperatorEndpointDto })
  @ApiErrors(404)
  rotate(@CurrentKey() key: AuthenticatedKey): Promise<OperatorEndpointDto> {
    return this.endpoints.rotateSecret(key.id);
  }
}
