import { Controller, Get, Param, Res } from '@nestjs/common';
import { ApiExcludeController } from '@nestjs/swagger';
import type { FastifyReply } from 'fastify';
import { Public } from '../auth/api-key.guard.js';
import { notFound } from '../common/app.error.js';
import { loadAssets, SECURITY_HEADERS, type DashboardAsset } from './dashboard.assets.js';

/**
 * The dashboard shell: static HTML, CSS and ES modules, public by design. It holds
 * no data; the page asks for a key and reads everything from the /v1 API with it.
 */
@Public()
@ApiExcludeController()
@Controller('dashboard')
export class DashboardController {
  private readonly assets = loadAssets();

  @Get()
  index(@Res() reply: FastifyReply): FastifyReply {
    return this.send(reply, this.assets.get('index.html')!);
  }

  @Get(':file')
  file(@Param('file') file: string, @Res() reply: FastifyReply): FastifyReply {
    const asset = this.assets.get(file);
    if (!asset) throw notFound('dashboard file');
    return this.send(reply, asset);
  }

  private send(reply: FastifyReply, asset: DashboardAsset): FastifyReply {
    return reply.headers(SECURITY_HEADERS).header('content-type', asset.contentType).send(asset.body);
  }
}
