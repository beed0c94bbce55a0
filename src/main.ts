import 'reflect-metadata';
import { startService } from './app.factory.js';
import { LOCAL_KEY_COMMAND } from './auth/api-key.service.js';
import { ConfigError, loadConfig } from './config/app.config.js';

/**
 * `npm start`: embedded Postgres (unless DATABASE_URL), migrations, API and worker.
 * SIGTERM/SIGINT drain in-flight calls, write everything back, and exit 0.
 */
async function main(): Promise<void> {
  let config;
  try {
    config = loadConfig(process.env);
  } catch (error) {
    if (error instanceof ConfigError) {
      console.error(error.message);
      process.exit(2);
    }
    throw error;
  }
  const service = await startService(config);
  const lines = [`callback dispatch service (${config.role}) listening on ${service.url}`, `  API docs:  ${service.url}/docs`];
  const { created, bootstrap } = service.firstKey;
  if (created) {
    lines.push(
      config.bootstrapApiKey ? '  API key:   the BOOTSTRAP_API_KEY you set (admin)' : `  API key:   ${created.key}   (admin; shown once, store it now)`,
      `  try:       curl -H "Authorization: Bearer <key>" ${service.url}/v1/batches`,
    );
  } else if (bootstrap === 'active') {
    lines.push('  API key:   the BOOTSTRAP_API_KEY you set (admin)');
  } else if (bootstrap === 'not_added') {
    lines.push('  API key:   BOOTSTRAP_API_KEY was NOT added: this database has keys already (see the warning above)');
  } else if (bootstrap === 'revoked') {
    lines.push('  API key:   BOOTSTRAP_API_KEY is revoked and stays revoked (see the warning above)');
  }
  if (!created && bootstrap !== 'active' && config.role !== 'worker') {
    lines.push(`  auth:      Authorization: Bearer <key>; no key at hand? \`${LOCAL_KEY_COMMAND}\` makes an admin key without one`);
  }
  console.log(lines.join('\n'));

  const stop = (signal: string) => {
    console.log(`${signal}: draining in-flight callbacks and stopping`);
    // Draining talks to the database; one that stopped answering must not keep the
    // process alive. What this worker still holds then goes back to pending when its
    // leases expire (at least once, same webhook-id).
    const limitMs = config.shutdownGraceMs + config.shutdownOverrunMs;
    setTimeout(() => {
      console.error(`shutdown not done after ${limitMs} ms (is the database answering?); exiting anyway`);
      process.exit(1);
    }, limitMs).unref();
    service.close().then(
      () => process.exit(0),
      (error) => {
        console.error('shutdown failed', error);
        process.exit(1);
      },
    );
  };
  process.once('SIGTERM', () => stop('SIGTERM'));
  process.once('SIGINT', () => stop('SIGINT'));
}

main().catch((error) => {
  console.error('failed to start:', error instanceof Error ? error.message : String(error ?? 'unknown error'));
  process.exit(1);
});
