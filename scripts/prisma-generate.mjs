// Generates the Prisma client into src/generated/prisma.
// `prisma generate` does not run the schema engine, but the CLI insists on finding
// its binary first and would try to download it; on machines without that download
// host we point it at an existing file (ARCHITECTURE.md: migrations).
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import path from 'node:path';

const root = path.dirname(path.dirname(fileURLToPath(import.meta.url)));
const cli = path.join(root, 'node_modules/prisma/build/index.js');
if (!existsSync(cli)) {
  // An install without dev dependencies: the client is compiled into dist/ already.
  console.error('prisma generate skipped: the prisma CLI (a dev dependency) is not installed');
  process.exit(0);
}
const env = { ...process.env };
if (!env.PRISMA_SCHEMA_ENGINE_BINARY || !existsSync(env.PRISMA_SCHEMA_ENGINE_BINARY)) {
  env.PRISMA_SCHEMA_ENGINE_BINARY = path.join(root, 'package.json');
}
env.PRISMA_HIDE_UPDATE_MESSAGE = '1';
try {
  execFileSync(process.execPath, [cli, 'generate'], {
    cwd: root,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
} catch (error) {
  // Quiet when it works; everything it said when it does not.
  process.stderr.write(`${error.stdout ?? ''}${error.stderr ?? ''}`);
  process.exit(1);
}
