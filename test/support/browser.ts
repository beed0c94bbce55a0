import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type BrowserContext, type Page } from 'playwright-core';

/** Debian's chromium (`apt-get install chromium`; .ci/run installs it): no browser download. */
export const CHROMIUM = '/usr/bin/chromium';
export const SCREENSHOTS = 'test-results/screenshots';

/**
 * A real headless Chromium with a fresh profile, and the page's errors collected
 * (console errors, uncaught exceptions, CSP violations) so a test can assert none.
 */
export async function openBrowser(): Promise<{ context: BrowserContext; page: Page; errors: string[]; close: () => Promise<void> }> {
  const profile = await mkdtemp(join(tmpdir(), 'dashboard-chromium-'));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    viewport: { width: 1400, height: 900 },
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
      '--disable-component-update', '--disable-sync'],
  });
  const page = context.pages()[0] ?? (await context.newPage());
  const errors: string[] = [];
  page.on('console', (m) => { if (m.type() === 'error') errors.push(`console: ${m.text()}`); });
  page.on('pageerror', (e) => errors.push(`pageerror: ${e.message}`));
  await mkdir(SCREENSHOTS, { recursive: true });
  return {
    context, page, errors,
    close: async () => {
      await context.close();
      await rm(profile, { recursive: true, force: true });
    },
  };
}
