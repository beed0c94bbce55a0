// Lints the API document with Redocly's recommended rules and exits non-zero on an
// error: the document as the built app (dist/) makes it in Nest's preview mode (no
// database, no port), the one served at /docs/openapi.json, written to a temp file for
// the linter. Offline: the rules ship inside @redocly/cli, its telemetry and update
// check are off. Run through `npm run lint:openapi`, which builds first; .ci/run runs it
// with the lint.
import 'reflect-metadata';
import { spawnSync } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const dist = new URL('../dist/', import.meta.url);
const { previewOpenApiDocument } = await import(new URL('openapi.document.js', dist).href);
const { documentSource } = await import(new URL('client/schema.generator.js', dist).href);
const redocly = fileURLToPath(new URL('../node_modules/@redocly/cli/bin/cli.js', import.meta.url));

const dir = await mkdtemp(join(tmpdir(), 'openapi-lint-'));
try {
  const file = join(dir, 'openapi.json');
  await writeFile(file, documentSource(await previewOpenApiDocument()));
  const { status, error } = spawnSync(process.execPath, [redocly, 'lint', '--extends=recommended', '--format=codeframe', file], {
    stdio: 'inherit',
    env: { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true' },
  });
  if (error) throw error;
  process.exitCode = status ?? 1;
} finally {
  await rm(dir, { recursive: true, force: true });
}
