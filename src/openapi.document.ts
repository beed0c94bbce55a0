import type { INestApplication } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { FastifyAdapter, type NestFastifyApplication } from '@nestjs/platform-fastify';
import { DocumentBuilder, SwaggerModule, type OpenAPIObject } from '@nestjs/swagger';
import { AppModule } from './app.module.js';
import { directTarget } from './database/database.target.js';
import { loadConfig } from './config/app.config.js';
import { METRICS_TOKEN } from './metrics/metrics.controller.js';
import { newSecretsKey, SecretKeyring } from './config/secret-keyring.js';

/**
 * The API document served at /docs/openapi.json. Built from the controllers' and
 * DTOs' decorators; the client in src/client/ is generated from it
 * (`npm run client:generate`), and test/api/openapi.test.ts fails when they drift.
 *
 * OpenAPI 3.1, so a field that may be null says so in JSON Schema's own terms: Nest
 * turns `nullable: true` into `type: [T, 'null']`, and on a DTO-typed field into
 * `anyOf: [{$ref}, {type: 'null'}]`. (In 3.0, `nullable` beside `allOf: [{$ref}]`
 * allows no null at all: the referenced object still has to match, which is how
 * `waiting: null` came to contradict the document.) The one server is relative: the
 * service is self-hosted, so the API is wherever this document was fetched from.
 */
export function buildOpenApiDocument(app: INestApplication): OpenAPIObject {
  const document = SwaggerModule.createDocument(
    app,
    new DocumentBuilder()
      .setOpenAPIVersion('3.1.0')
      .setTitle('Callback dispatch service')
      .setDescription('Batches of HTTP callbacks, delivered concurrently with timeouts, retries and per-host limits.')
      .setVersion('1')
      .addServer('/', 'the service that serves this document')
      .addBearerAuth({
        type: 'http',
        scheme: 'bearer',
        bearerFormat: 'API key',
        description: 'An API key (`cbk_…`): BOOTSTRAP_API_KEY, or one POST /v1/keys made',
      })
      .addBearerAuth({ type: 'http', scheme: 'bearer', bearerFormat: 'METRICS_TOKEN', description: 'METRICS_TOKEN, when the service sets one' }, METRICS_TOKEN)
      .addCookieAuth(
        'cbp_session',
        {
          type: 'apiKey',
          in: 'cookie',
          description:
            'A receiver portal session (POST /v1/receivers/{name}/portal-sessions) as the cookie GET /portal/session sets; changes also need its x-csrf-token. Scripts may send the token as Authorization: Bearer cbp_… instead (no CSRF token then)',
        },
        'portal',
      )
      .build(),
  );
  document.info.license = { name: 'MIT', identifier: 'MIT' } as OpenAPIObject['info']['license'];
  return document;
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
