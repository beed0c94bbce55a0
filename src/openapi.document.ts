import type { INestApplication } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { FastifyAdapter, type NestFastifyApplication } from '@nestjs/platform-fastify';
import { DocumentBuilder, SwaggerModule, type OpenAPIObject } from '@nestjs/swagger';
import { AppModule } from './app.module.js';
import { directTarget } from './database/database.target.js';
import { loadConfig } from './config/app.config.js';
import { newSecretsKey, SecretKeyring } from './signing/secret-keyring.js';

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

/**
 * The document without a database or a port: the app in Nest's preview mode
 * (modules and routes scanned, no provider instantiated), for `npm run client:generate`.
 */
export async function previewOpenApiDocument(): Promise<OpenAPIObject> {
  const config = loadConfig({});
  const app = await NestFactory.create<NestFastifyApplication>(
    AppModule.register(config, directTarget('postgresql://preview.invalid/none'), new SecretKeyring(newSecretsKey())),
    new FastifyAdapter(),
    {
      preview: true,
      logger: false,
      abortOnError: false,
    },
  );
  try {
    return buildOpenApiDocument(app);
  } finally {
    await app.close();
  }
}
