// `npm run build`: a self-contained dist/, swapped in whole.
//
//   1. the Prisma client (scripts/prisma-generate.mjs), then src/ compiled by SWC into a
//      fresh folder beside dist/ (dist.build-<pid>): the same compiler and settings the
//      tests run the sources with (vitest.config.ts), in under a second where tsc took
//      ~20 s of CPU. SWC only strips the types: `npm run typecheck` checks them (CI runs
//      it before any test);
//   2. what the service reads at run time copied in: prisma/migrations to migrations/,
//      src/dashboard/assets and src/portal/assets to dashboard/assets and portal/assets,
//      the payload check threads' modules (src/events/checks), the transform sandbox's
//      thread (src/transforms/sandbox.worker.mjs);
//      the callbacks bin made executable; a stamp (.build-stamp) last;
//   3. dist/ renamed away and the new folder renamed to dist/, then the old one removed.
//
// So dist/ is never half written: a process starting meanwhile runs the old build or
// the new one. Builds take a lock (dist.build.lock): several started at once (`npm
// start` in several terminals) run one after another, and with --if-stale (npm start)
// the later ones find dist/ fresh and build nothing. --if-stale builds only when a
// source (src/, prisma/, package.json, the tsconfigs, this script) is newer than the
// stamp of dist/.
import { execFileSync } from 'node:child_process';
import { transformFileSync } from '@swc/core';
import {
  chmodSync,
  closeSync,
  cpSync,
  existsSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
  writeSync,
} from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.dirname(path.dirname(fileURLToPath(import.meta.url)));
const dist = path.join(root, 'dist');
const stamp = path.join(dist, '.build-stamp');
const lockFile = path.join(root, 'dist.build.lock');
const ifStale = process.argv.includes('--if-stale');
/** How long a build waits for another one's lock before it gives up. */
const LOCK_WAIT_MS = 15 * 60_000;

/** What the build reads: a change to any of them makes dist/ stale. */
const INPUTS = [
  'src',
  'prisma',
  'package.json',
  'package-lock.json',
  'tsconfig.json',
  'tsconfig.build.json',
  'scripts/build.mjs',
  'scripts/prisma-generate.mjs',
];
/** What the service reads at run time, copied into dist/: [from, to]. */
const RUNTIME_FILES = [
  // plain ES modules the payload check threads load (src/events/payload-check.pool.ts)
  ['src/events/checks', 'events/checks'],
  // the transform sandbox's thread, a plain ES module (src/transforms/transform.sandbox.ts)
  ['src/transforms/sandbox.worker.mjs', 'transforms/sandbox.worker.mjs'],
  ['prisma/migrations', 'migrations'],
  ['src/dashboard/assets', 'dashboard/assets'],
  ['src/portal/assets', 'portal/assets'],
];

function newestMtime(file) {
  if (!existsSync(file)) return 0;
  const stat = statSync(file);
  if (!stat.isDirectory()) return stat.mtimeMs;
  let newest = stat.mtimeMs;
  for (const name of readdirSync(file)) newest = Math.max(newest, newestMtime(path.join(file, name)));
  return newest;
}

function isFresh() {
  if (!existsSync(stamp)) return false;
  const built = statSync(stamp).mtimeMs;
  return INPUTS.every((input) => newestMtime(path.join(root, input)) <= built);
}

function running(pid) {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return error.code === 'EPERM';
  }
}

/** Takes the build lock (O_EXCL), waiting while a live build holds it; a dead build's lock is taken over. */
async function lock() {
  const until = Date.now() + LOCK_WAIT_MS;
  let told = false;
  for (;;) {
    try {
      const fd = openSync(lockFile, 'wx');
      writeSync(fd, String(process.pid));
      closeSync(fd);
      return;
    } catch (error) {
      if (error.code !== 'EEXIST') throw error;
    }
    const holder = Number(readFileSync(lockFile, 'utf8'));
    if (holder && !running(holder)) {
      rmSync(lockFile, { force: true });
      continue;
    }
    if (Date.now() > until) throw new Error(`another build (pid ${holder}) has held ${lockFile} for ${LOCK_WAIT_MS / 60_000} min`);
    if (!told) console.error(`waiting for the build of pid ${holder} to finish`);
    told = true;
    await new Promise((r) => setTimeout(r, 200));
  }
}

function build() {
  const out = path.join(root, `dist.build-${process.pid}`);
  rmSync(out, { recursive: true, force: true });
  try {
    execFileSync(process.execPath, [path.join(root, 'scripts/prisma-generate.mjs')], { stdio: 'inherit' });
    compile(path.join(root, 'src'), out);
    for (const [from, to] of RUNTIME_FILES) cpSync(path.join(root, from), path.join(out, to), { recursive: true });
    chmodSync(path.join(out, 'cli/main.js'), 0o755);
    writeFileSync(path.join(out, '.build-stamp'), `${new Date().toISOString()}\n`);
  } catch (error) {
    rmSync(out, { recursive: true, force: true });
    throw error;
  }
  const old = path.join(root, `dist.old-${process.pid}`);
  if (existsSync(dist)) renameSync(dist, old);
  renameSync(out, dist);
  rmSync(old, { recursive: true, force: true });
}

/**
 * Every module of `from` (not the specs, not declarations) as ES2023 JavaScript in `to`,
 * with its source map: decorators and their metadata as tsc's `experimentalDecorators`
 * and `emitDecoratorMetadata` (tsconfig.json) make them, class names kept (Nest
 * names providers by them), helpers inlined (dist/ needs no @swc/helpers).
 */
function compile(from, to) {
  for (const entry of readdirSync(from, { withFileTypes: true })) {
    const source = path.join(from, entry.name);
    if (entry.isDirectory()) {
      compile(source, path.join(to, entry.name));
      continue;
    }
    if (!entry.name.endsWith('.ts') || entry.name.endsWith('.d.ts') || entry.name.endsWith('.spec.ts')) continue;
    const target = path.join(to, entry.name.replace(/\.ts$/, '.js'));
    const { code, map } = transformFileSync(source, {
      swcrc: false,
      sourceMaps: true,
      outputPath: target,
      jsc: {
        parser: { syntax: 'typescript', decorators: true },
        transform: { legacyDecorator: true, decoratorMetadata: true },
        keepClassNames: true,
        target: 'es2023',
      },
      module: { type: 'es6' },
    });
    mkdirSync(to, { recursive: true });
    writeFileSync(target, `${code}\n//# sourceMappingURL=${path.basename(target)}.map\n`);
    writeFileSync(`${target}.map`, map);
  }
}

/** Folders a killed build left (its lock is ours now, so no build is writing them). */
function removeLeftovers() {
  for (const name of readdirSync(root)) {
    if (/^dist\.(build|old)-\d+$/.test(name)) rmSync(path.join(root, name), { recursive: true, force: true });
  }
}

await lock();
try {
  if (ifStale && isFresh()) {
    console.error('dist/ is up to date: not rebuilt');
  } else {
    removeLeftovers();
    build();
  }
} catch (error) {
  console.error(`build failed: ${error.message}`);
  process.exitCode = 1;
} finally {
  rmSync(lockFile, { force: true });
}
