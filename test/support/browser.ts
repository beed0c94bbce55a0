import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type BrowserContext, type Page } from 'playwright-core';

/** Debian's chromium, used when installed (`apt-get install chromium`). */
export const DEBIAN_CHROMIUM = '/usr/bin/chromium';
export const SCREENSHOTS = 'test-results/screenshots';

const HEADLESS_FLAGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

/**
 * Flags of @sparticuz/chromium that weaken the page's security model: dropped, so the
 * dashboard's CSP and same-origin behaviour are tested as a real browser enforces them.
 */
const UNSAFE_FLAGS = new Set(['--disable-web-security', '--allow-running-insecure-content']);

/**
 * Debian's chromium when present, else the Chromium build that `npm install` brings
 * (@sparticuz/chromium, a dev dependency; unpacked to the temp dir on first use, ~3 s),
 * so `npm test` needs nothing but Node on the machine.
 */
export async function chromiumLaunch(): Promise<{ executablePath: string; args: string[]; source: string }> {
  if (existsSync(DEBIAN_CHROMIUM)) return { executablePath: DEBIAN_CHROMIUM, args: HEADLESS_FLAGS, source: 'debian' };
  const { default: packaged } = await import('@sparticuz/chromium');
  // Its own `--headless='shell'` would override ours; the shell build is what it ships.
  const own = packaged.args.filter((a) => !UNSAFE_FLAGS.has(a) && !a.startsWith('--headless'));
  return { executablePath: await packaged.executablePath(), args: [...new Set([...own, ...HEADLESS_FLAGS])], source: '@sparticuz/chromium' };
}

/**
 * A real headless Chromium with a fresh profile, and the page's errors collected
 * (console errors, uncaught exceptions, CSP violations) so a test can assert none.
 */
export async function openBrowser(): Promise<{ context: BrowserContext; page: Page; errors: string[]; close: () => Promise<void> }> {
  const profile = await mkdtemp(join(tmpdir(), 'dashboard-chromium-'));
  const { executablePath, args } = await chromiumLaunch();
  const context = await chromium.launchPersistentContext(profile, {
    executablePath,
    headless: true,
    viewport: { width: 1400, height: 900 },
    args,
  });
  const page = context.pages()[0] ?? (await context.newPage());
  const errors: string[] = [];
  page.on('console', (m) => {
    if (m.type() === 'error') errors.push(`console: ${m.text()}`);
  });
  page.on('pageerror', (e) => errors.push(`pageerror: ${e.message}`));
  await mkdir(SCREENSHOTS, { recursive: true });
  return {
    context,
    page,
    errors,
    close: async () => {
      await context.close();
      await rm(profile, { recursive: true, force: true });
    },
  };
}

/**
 * Waits for `selector`, as page.waitForSelector does; when it does not show, the
 * error says what `shown` (the panel the answer goes to) holds instead: an error
 * answered, or still the answer before.
 */
export async function waitShowing(page: Page, selector: string, shown: string): Promise<void> {
  await page.waitForSelector(selector).catch(async (error: Error) => {
    const text = await page.textContent(shown).catch(() => null);
    throw new Error(`${error.message.split('\n')[0]}\n${shown} shows: ${text}`);
  });
}
