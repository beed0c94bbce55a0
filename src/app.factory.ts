import { registerReadAfterWrite } from './http/read-after-write.hooks.js';
import { ReadReplica } from './database/read-replica.js';
import 'reflect-metadata';
import { Logger } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { FastifyAdapter, type NestFastifyApplication } from '@nestjs/platform-fastify';
import { SwaggerModule } from '@nestjs/swagger';
import { randomUUID } from 'node:crypto';
import { AppModule } from './app.module.js';
import { ApiKeyService, type FirstKeyOutcome } from './auth/api-key.service.js';
import { registerAuthHooks } from './http/auth.hooks.js';
import { KeyAuthService } from './auth/key-auth.service.js';
import { ErrorFilter } from './http/error.filter.js';
import { buildValidationPipe } from './common/validation.pipe.js';
import { registerJsonParser, registerSecurityHooks } from './http/security.hooks.js';
import { serviceUrl } from './common/service-url.js';
import { cutConnectionsOnStop } from './common/stop.connections.js';
import type { AppConfig } from './config/app.config.js';
import { lockDataDir, type DataDirLock } from './database/data-dir.lock.js';
import { resolveDatabaseTarget } from './database/database.target.js';
import { startEmbeddedPostgres } from './database/embedded-postgres.js';
import { migrate } from './database/migrator.js';
import { checkServer, describeServer, readServerFacts } from './database/server.check.js';
import { AppLogger } from './logging/app.logger.js';
import { registerRequestLogging } from './logging/request.logging.js';
import { metricsClosedMessage, metricsOpenWithoutToken } from './metrics/metrics.controller.js';
import { MetricsService } from './metrics/metrics.service.js';
import { registerRequestMetrics } from './metrics/request.metrics.js';
import { buildOpenApiDocument } from './openapi.document.js';
import { PortalAuthService } from './portal/portal-auth.service.js';
import { registerRequestTracing } from './tracing/request.tracing.js';
import { loadKeyring } from './config/secret-keyring.js';
import { prepareSecretsAtRest } from './signing/secret-reseal.js';
import { startTracing, tracing } from './tracing/tracing.setup.js';

export interface RunningService {
  app: NestFastifyApplication;
  /** Base URL of the API, e.g. http://127.0.0.1:3000 */
  url: string;
  databaseUrl: string;
  /** What the start did about the first key: the key it made, or what became of BOOTSTRAP_API_KEY. */
  firstKey: FirstKeyOutcome;
  /** Graceful stop: drain the dispatcher, close the API, stop the embedded database. */
  close: () => Promise<void>;
}

/**
 * Starts the whole service (database, migrations, API, worker) as the config says. A
 * start that fails at any step stops what it had started (the app, tracing, the
 * embedded Postgres and its DATA_DIR lock) before it throws.
 */
export async function startService(config: AppConfig): Promise<RunningService> {
  // JSON lines (pino) with secrets redacted, from the first line on; LOG_LEVEL applies.
  const configured = [config.bootstrapApiKey, config.metricsToken, config.secretsKey, ...config.secretsKeyPrevious];
  const appLogger = new AppLogger(
    config.logLevel,
    configured.filter((s) => s !== undefined),
  );
  Logger.overrideLogger(appLogger);
  const logger = new Logger('Service');
  // Before any database: an external one without SECRETS_KEY is refused here.
  const keys = loadKeyring(config);
  /** What this start started, stopped in reverse order by close() or by a failed start. */
  const started: Array<() => Promise<void>> = [];
  try {
    return await startOn(config, appLogger, keys, started);
  } catch (error) {
    await stopAll(started).catch((stopError: unknown) => logger.error(`stopping after a failed start: ${(stopError as Error).message}`));
    throw error;
  }
}

/** Runs the stops of what was started, last started first; each runs whatever the one before did. */
async function stopAll(started: Array<() => Promise<void>>): Promise<void> {
  let failure: unknown;
  for (const stop of started.splice(0).reverse()) await stop().catch((error: unknown) => (failure ??= error));
  if (failure !== undefined) throw failure;
}

async function startOn(
  config: AppConfig,
  appLogger: AppLogger,
  { keyring, source: keySource }: ReturnType<typeof loadKeyring>,
  started: Array<() => Promise<void>>,
): Promise<RunningService> {
  const logger = new Logger('Service');
  let databaseUrl = config.databaseUrl;
  let lock: DataDirLock | undefined;
  if (!databaseUrl) {
    // One process owns the embedded Postgres of a DATA_DIR: a second one is refused, naming the first.
    const held = lockDataDir(config.dataDir, config.role);
    lock = held;
    started.push(async () => held.release());
    const embedded = await startEmbeddedPostgres(config.dataDir, config.embeddedPgPort, (m) => logger.warn(`postgres: ${m}`));
    databaseUrl = embedded.url;
    started.push(embedded.stop);
  }
  // Which server, how reached, and what it is set to: checked before anything runs on it.
  const target = await resolveDatabaseTarget(config, databaseUrl);
  const facts = await readServerFacts(target.directUrl);
  checkServer(facts);
  logger.log(describeServer(facts, target));
  const applied = await migrate(target.directUrl);
  if (applied.length > 0) logger.log(`applied migrations: ${applied.join(', ')}`);
  const secrets = await prepareSecretsAtRest(target.directUrl, keyring);
  logger.log(
    `signing secrets sealed under key ${keyring.currentId} from ${keySource}` +
      (keyring.ids.length > 1 ? `; also opening ${keyring.ids.slice(1).join(', ')} (SECRETS_KEY_PREVIOUS)` : '') +
      (secrets.sealed > 0 ? `; sealed ${secrets.sealed} stored in plain text` : ''),
  );

  // Before anything is served: the first request is traced too. Off (nothing
  // loaded) unless the OTEL_* variables ask for traces.
  await startTracing(config);
  // After the last write-back: its spans are exported too.
  started.push(() => tracing.shutdown());
  const adapter = new FastifyAdapter({
    bodyLimit: config.maxRequestBytes,
    // Only these proxies' X-Forwarded-* headers are believed: req.ip is then the client
    // they name (the failed-key limit and the trace's client.address use it), else the socket's address.
    trustProxy: config.trustedProxies.length > 0 ? config.trustedProxies : false,
    // Receiver and event type names are up to 128 characters (fastify's default, 100, answered 414 to longer ones),
    // percent-encoded up to three times as long.
    routerOptions: { maxParamLength: 400 },
    genReqId: (req: { headers: Record<string, string | string[] | undefined> }) => {
      const given = req.headers['x-request-id'];
      return typeof given === 'string' && /^[\w.-]{1,64}$/.test(given) ? given : randomUUID();
    },
  });
  const app = await NestFactory.create<NestFastifyApplication>(AppModule.register(config, target, keyring), adapter, {
    logger: appLogger,
  });
  const stopping = cutConnectionsOnStop(app.getHttpAdapter().getInstance(), config.shutdownGraceMs);
  started.push(async () => {
    const stopped = stopping();
    try {
      await app.close();
    } finally {
      stopped();
    }
  });
  app.useGlobalFilters(new ErrorFilter());
  app.useGlobalPipes(buildValidationPipe());
  registerJsonParser(app, config);
  registerSecurityHooks(app.getHttpAdapter().getInstance());
  registerRequestLogging(app.getHttpAdapter().getInstance(), appLogger);
  registerRequestTracing(app.getHttpAdapter().getInstance());
  registerRequestMetrics(app.getHttpAdapter().getInstance(), app.get(MetricsService));
  // Last of the request hooks: a refusal is logged, traced and counted first.
  registerAuthHooks(app.getHttpAdapter().getInstance(), app.get(KeyAuthService), app.get(PortalAuthService));
  registerReadAfterWrite(app.getHttpAdapter().getInstance(), app.get(ReadReplica));
  // Built on the first request for it, not at start: scanning every route's decorators
  // takes ~150 ms of CPU that a worker, or an API nobody reads the docs of, never needs.
  SwaggerModule.setup('docs', app, () => buildOpenApiDocument(app), { jsonDocumentUrl: 'docs/openapi.json' });

  // Ready means ready: migrations are applied (above) and the first key exists before
  // the port answers at all, so whoever waits for /health/ready (an orchestrator, a
  // script holding BOOTSTRAP_API_KEY) can use the key on its very next request.
  await app.init();
  const firstKey = config.role === 'worker' ? {} : await app.get(ApiKeyService).ensureFirstKey();
  let closing: Promise<void> | undefined;
  const close = () => (closing ??= stopAll(started));
  // A port taken by another process: the worker started with app.init() and may hold
  // claims already, and the failed start's stop hands back what it did not send,
  // instead of leaving those rows leased, and their hosts' slots taken, until the
  // lease runs out.
  await app.listen(config.port, config.host);
  if (!config.metricsToken && !metricsOpenWithoutToken(config)) logger.warn(metricsClosedMessage(config));
  const address = app.getHttpServer().address();
  const port = typeof address === 'object' && address ? address.port : config.port;
  const url = serviceUrl(config.host, port);
  lock?.listening(url);
  return { app, url, databaseUrl, firstKey, close };
}
