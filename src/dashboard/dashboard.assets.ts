import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, extname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** One static file of the dashboard, read once at start. */
export interface DashboardAsset {
  body: Buffer;
  contentType: string;
}

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
};

/**
 * The assets are not compiled (plain ES modules, no build step): they live in
 * src/<feature>/assets, and the build copies them to dist/<feature>/assets
 * (scripts/build.mjs), so the sources (tests) and a deployed dist/ each find them
 * beside the feature's own code.
 */
export function assetsDir(from = dirname(fileURLToPath(import.meta.url)), feature = 'dashboard'): string {
  const dir = join(from, '..', feature, 'assets');
  if (!existsSync(dir)) throw new Error(`${feature} assets: ${dir} is missing (npm run build copies them into dist/)`);
  return dir;
}

/**
 * Loads every servable file of the assets folder (flat, by extension) into memory.
 * Requests are answered only from this map, so no request path ever reaches the
 * file system: `..` or encoded slashes simply find nothing.
 */
export function loadAssets(dir = assetsDir()): Map<string, DashboardAsset> {
  const assets = new Map<string, DashboardAsset>();
  for (const name of readdirSync(dir)) {
    const contentType = TYPES[extname(name)];
    if (!contentType || name.endsWith('.d.ts')) continue;
    assets.set(name, { body: readFileSync(join(dir, name)), contentType });
  }
  if (!assets.has('index.html')) throw new Error(`dashboard assets: index.html missing in ${dir}`);
  return assets;
}

/**
 * Headers of every dashboard response. The shell has no inline script or style, so
 * a strict policy holds: everything from this origin, data only through the /v1 API.
 */
export const SECURITY_HEADERS: Readonly<Record<string, string>> = {
  'content-security-policy':
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; " +
    "object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'",
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'x-frame-options': 'DENY',
  'cache-control': 'no-cache',
};
