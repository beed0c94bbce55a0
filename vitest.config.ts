import swc from 'unplugin-swc';
import { configDefaults, defineConfig } from 'vitest/config';

// SWC compiles the tests and sources with decorator metadata, which Nest's DI needs
// and esbuild does not emit.
//
// The tiers are projects, chosen by folder (docs/development.md has the table):
//   unit  src/**/*.spec.ts and test/unit/: no database, no network
//   db    test/db/: statements, plans, workers, leases, tasks, faults; run on every
//         server of the matrix
//   api   test/api/: the HTTP API, CLI, client, portal and dashboard as users meet them
//   db:timing, api:timing, unit:timing  *.timing.test.ts of those folders and
//         src/**/*.timing.spec.ts: assertions about time (recorded durations, pick-up
//         bounds, a timeout's cut), run one file at a time after the others
//   slow  test/slow/: load, soak, chaos and throughput-ratio tests (npm run test:slow)
// Every file gets its own database (test/support/database.ts), so files run in parallel.
// *.pgbouncer.test.ts start PgBouncers of their own (Debian's package): only with
// TEST_PGBOUNCER=1, so `npm test` needs nothing but Node.
const pgbouncer = process.env.TEST_PGBOUNCER === '1' ? [] : ['test/**/*.pgbouncer.test.ts'];
const DATABASE = { globalSetup: ['test/support/global-setup.ts'], exclude: [...configDefaults.exclude, ...pgbouncer] };
const TIMING = '**/*.timing.test.ts';
const TIMING_SPEC = 'src/**/*.timing.spec.ts';
const ALONE = (groupOrder: number) => ({ fileParallelism: false, sequence: { groupOrder } });

export default defineConfig({
  plugins: [swc.vite({ module: { type: 'es6' } })],
  test: {
    // A worker's test files share its modules (isolate: false): the service's modules are
    // loaded once per worker, not once per file (about 4 s of CPU each). Tests keep no
    // state in modules: each file starts its own services on its own database.
    isolate: false,
    // Files run side by side in 4 workers whatever the cores (TEST_WORKERS overrides): most
    // of a test's time is waiting (for a receiver's answer, a timeout, Postgres), so on 2
    // cores vitest's default of one worker per core but one ran the files one at a time.
    maxWorkers: Number(process.env.TEST_WORKERS) || 4,
    testTimeout: 60_000,
    hookTimeout: 120_000,
    reporters: process.env.CI ? ['default', 'json'] : ['default'],
    outputFile: { json: 'test-results/vitest.json' },
    projects: [
      { extends: true, test: { name: 'unit', include: ['src/**/*.spec.ts', 'test/unit/**/*.test.ts'], exclude: [...configDefaults.exclude, TIMING_SPEC] } },
      { extends: true, test: { name: 'unit:timing', include: [TIMING_SPEC], ...ALONE(3) } },
      { extends: true, test: { name: 'db', include: ['test/db/**/*.test.ts'], ...DATABASE, exclude: [...DATABASE.exclude, TIMING] } },
      { extends: true, test: { name: 'api', include: ['test/api/**/*.test.ts'], ...DATABASE, exclude: [...DATABASE.exclude, TIMING] } },
      // Files whose assertions are about time run one at a time, after the rest: nothing
      // else of the run shares the cores with their measured calls.
      { extends: true, test: { name: 'db:timing', include: ['test/db/**/*.timing.test.ts'], ...DATABASE, ...ALONE(1) } },
      { extends: true, test: { name: 'api:timing', include: ['test/api/**/*.timing.test.ts'], ...DATABASE, ...ALONE(2) } },
      // One file at a time: its load, chaos and throughput ratios are measured with nothing else running.
      { extends: true, test: { name: 'slow', include: ['test/slow/**/*.test.ts'], ...DATABASE, fileParallelism: false } },
    ],
  },
});
