import type { INestApplication } from '@nestjs/common';
import { DocumentBuilder, SwaggerModule, type OpenAPIObject } from '@nestjs/swagger';

/**
 * The API document served at /docs/openapi.json. Built from the controllers' and
 * DTOs' decorators; the client in src/client/ is generated from it
 * (`npm run client:generate`), and test/openapi.test.ts fails when they drift.
 */
export function buildOpenApiDocument(app: INestApplication): OpenAPIObject {
  return SwaggerModule.createDocument(
    app,
    new DocumentBuilder()
      .setTitle('Callback dispatch service')
      .setDescription('Batches of HTTP callbacks, delivered concurrently with timeouts, retries and per-host limits.')
      .setVersion('1')
      .addBearerAuth()
      .build(),
  );
}
