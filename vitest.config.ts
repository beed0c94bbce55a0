import swc from 'unplugin-swc';
import { configDefaults, defineConfig } from 'vitest/config';

// SWC compiles the tests and sources with decorator metadata, which Nest's DI needs
// and esbuild does not emit. Unit specs live beside the code (src/**/*.spec.ts);
// integration and e2e tests under test/ use a real Postgres (test/support/global-setup.ts).
export default defineConfig({
  plugins: [swc.vite({ module: { type: 'es6' } })],
  test: {
    include: ['src/**/*.spec.ts', 'test/**/*.test.ts'],
    // *.pgbouncer.test.ts start PgBouncers of their own (Debian's package): only in
    // `npm run test:pgbouncer`, so `npm test` needs nothing but Node.
    exclude: [...configDefaults.exclude, ...(process.env.TEST_PGBOUNCER === '1' ? [] : ['test/**/*.pgbouncer.test.ts'])],
    globalSetup: ['test/support/global-setup.ts'],
    testTimeout: 60_000,
    hookTimeout: 120_000,
    // Timing assertions (±50 ms) need the two cores for one file at a time.
    fileParallelism: false,
    reporters: process.env.CI ? ['default', 'json'] : ['default'],
    outputFile: { json: 'test-results/vitest.json' },
  },
});
