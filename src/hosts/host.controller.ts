import { Body, Controller, Delete, Get, HttpCode, Param, Put, Query } from '@nestjs/common';
import { ApiBearerAuth, ApiOkResponse, ApiOperation, ApiParam, ApiTags } from '@nestjs/swagger';
import { AdminOnly, CurrentKey } from '../auth/api-key.guard.js';
import type { AuthenticatedKey } from '../auth/api-key.service.js';
import { ApiAuthErrors, ApiErrors } from '../common/error.dto.js';
import { ClearedGoneDto, HostDto, HostListQueryDto, HostPageDto, HostQueryDto } from './dto/host.dto.js';
import { HostLimitsDto } from './dto/host-limits.dto.js';
import { HostParamPipe } from './host-param.pipe.js';
import { HostService } from './host.service.js';

const HOST_PARAM = { name: 'host', description: 'URL-encoded destination, e.g. https%3A%2F%2Fexample.com%3A443' };

/** Per-destination limits, in-flight count, queue depth, breaker and recent latency. */
@ApiTags('hosts')
@ApiBearerAuth()
@ApiAuthErrors()
@Controller('v1/hosts')
export class HostController {
  constructor(private readonly hosts: HostService) {}

  @Get()
  @ApiOperation({ summary: 'List destination hosts' })
  @ApiOkResponse({ type: HostPageDto })
  list(@CurrentKey() key: AuthenticatedKey, @Query() q: HostListQueryDto): Promise<HostPageDto> {
    return this.hosts.listHosts(key, { after: q.cursor, limit: q.limit }, q.since);
  }

  @Get(':host')
  @ApiOperation({ summary: "Get a destination host's limits and figures" })
  @ApiParam(HOST_PARAM)
  @ApiOkResponse({ type: HostDto })
  @ApiErrors(404)
  get(@CurrentKey() key: AuthenticatedKey, @Param('host', HostParamPipe) host: string, @Query() q: HostQueryDto): Promise<HostDto> {
    return this.hosts.getHost(key, host, q.since);
  }

  @Put(':host/limits')
  @ApiOperation({ summary: "Set a destination host's limits" })
  @AdminOnly()
  @ApiParam(HOST_PARAM)
  @ApiOkResponse({ type: HostDto })
  @ApiErrors(403, 415)
  setLimits(@CurrentKey() key: AuthenticatedKey, @Param('host', HostParamPipe) host: string, @Body() dto: HostLimitsDto): Promise<HostDto> {
    return this.hosts.setLimits(key, host, dto);
  }

  /** A key forgets its own 410 marks on the host; an admin key, every key's. */
  @Delete(':host/gone')
  @ApiOperation({ summary: "Clear a destination host's 410 Gone marks" })
  @HttpCode(200)
  @ApiParam(HOST_PARAM)
  @ApiOkResponse({ type: ClearedGoneDto })
  clearGone(@CurrentKey() key: AuthenticatedKey, @Param('host', HostParamPipe) host: string): Promise<ClearedGoneDto> {
    return this.hosts.clearGone(key, host);
  }
}
