import { Body, Controller, Delete, Get, HttpCode, Param, Put, Query } from '@nestjs/common';
import { ApiBearerAuth, ApiParam, ApiQuery, ApiTags } from '@nestjs/swagger';
import { AdminOnly, CurrentKey } from '../auth/api-key.guard.js';
import type { AuthenticatedKey } from '../auth/api-key.service.js';
import { dateParam, pageLimit } from '../common/params.js';
import { HostLimitsDto } from './dto/host-limits.dto.js';
import { destinationPathParam, hostCursorParam } from './host.policy.js';
import { HostService } from './host.service.js';

const HOST_PARAM = { name: 'host', description: 'URL-encoded destination, e.g. https%3A%2F%2Fexample.com%3A443' };

/** Per-destination limits, in-flight count, queue depth, breaker and recent latency. */
@ApiTags('hosts')
@ApiBearerAuth()
@Controller('v1/hosts')
export class HostController {
  constructor(private readonly hosts: HostService) {}

  @Get()
  @ApiQuery({ name: 'since', required: false, description: 'start of the latency window (ISO-8601; default 15 minutes ago)' })
  @ApiQuery({ name: 'cursor', required: false, description: 'nextCursor of the previous page' })
  @ApiQuery({ name: 'limit', required: false, description: 'hosts per page, 1 to 1000 (default 100)' })
  list(@CurrentKey() key: AuthenticatedKey, @Query() q: Record<string, string>) {
    return this.hosts.listHosts(key, { after: hostCursorParam(q.cursor), limit: pageLimit(q.limit) }, dateParam('since', q.since));
  }

  @Get(':host')
  @ApiParam(HOST_PARAM)
  get(@CurrentKey() key: AuthenticatedKey, @Param('host') host: string, @Query('since') since?: string) {
    return this.hosts.getHost(key, destinationPathParam(host), dateParam('since', since));
  }

  @Put(':host/limits')
  @AdminOnly()
  @ApiParam(HOST_PARAM)
  setLimits(@CurrentKey() key: AuthenticatedKey, @Param('host') host: string, @Body() dto: HostLimitsDto) {
    return this.hosts.setLimits(key, destinationPathParam(host), dto);
  }

  @Delete(':host/gone')
  @AdminOnly()
  @HttpCode(200)
  @ApiParam(HOST_PARAM)
  clearGone(@Param('host') host: string) {
    return this.hosts.clearGone(destinationPathParam(host));
  }
}
