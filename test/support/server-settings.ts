import { readFileSync } from 'node:fs';

/**
 * Settings of the PostgreSQL servers the tests start (no durability: a test
 * database never outlives its run, and a commit never waits on a disk flush).
 * One list, in scripts/test-server-settings.json, also read by
 * scripts/postgres-server.mjs --for-tests and .ci/run.
 */
export const TEST_SERVER_SETTINGS: string[] = JSON.parse(readFileSync(new URL('../../scripts/test-server-settings.json', import.meta.url), 'utf8')).settings;
