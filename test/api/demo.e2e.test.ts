import { spawn } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestService, TEST_KEY, type TestService } from '../support/service.js';

/**
 * `npm run demo -- --url … --key …` against a running service, so it starts only its
 * receiver: the real demo process, its real sleeps (3, 2, 5, 4, 7, 2, 1, 0 s), ~13 s.
 * The CLI's CALLBACKS_URL and CALLBACKS_API_KEY are not the demo's: set to another
 * address and a wrong key, they change nothing. (The README's first-use test runs the
 * demo with its own service.)
 */
describe('npm run demo', () => {
  let service: TestService;

  beforeAll(async () => {
    service = await startTestService();
  });
  afterAll(async () => {
    await service?.dispose();
  });

  it('should show the batch taking its slowest call, then the 5 s timeout cutting the 5 s and 7 s calls to code=0', async () => {
    const started = Date.now();
    const { code, stdout, stderr } = await new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve, reject) => {
      const child = spawn(process.execPath, ['dist/cli/demo.js', '--url', service.url, '--key', TEST_KEY], {
        env: { PATH: process.env.PATH, CALLBACKS_URL: 'http://127.0.0.1:9', CALLBACKS_API_KEY: 'cbk_not_a_key_of_anything_000' },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let out = '';
      let err = '';
      child.stdout.on('data', (c) => {
        out += c;
      });
      child.stderr.on('data', (c) => {
        err += c;
      });
      const timer = setTimeout(() => child.kill('SIGKILL'), 40_000);
      child.on('error', reject);
      child.on('close', (exit) => {
        clearTimeout(timer);
        resolve({ code: exit, stdout: out, stderr: err });
      });
    });
    expect(code, `${stdout}\n${stderr}`).toBe(0);
    const elapsed = Date.now() - started;
    expect(elapsed).toBeGreaterThan(12_000);
    expect(elapsed).toBeLessThan(20_000);

    const [first, second] = stdout.split('== the same 8 calls with a 5 s timeout');
    const calls = (text: string) =>
      [...text.matchAll(/\?sleep=(\d) :: code=(\d+), start=[\d.]+, end=[\d.]+, total=([\d.]+)\)/g)].map((m) => ({
        sleep: Number(m[1]),
        code: Number(m[2]),
        total: Number(m[3]),
      }));
    const a = calls(first);
    const b = calls(second);
    expect(a.map((c) => c.sleep).sort()).toEqual([0, 1, 2, 2, 3, 4, 5, 7]);
    // Each call's recorded time is its own (the sleeps are whole seconds apart), however
    // busy the machine the other test files make it.
    for (const c of a) {
      expect(c.code).toBe(200);
      expect(Math.abs(c.total - c.sleep)).toBeLessThan(0.5);
    }
    expect(b).toHaveLength(8);
    for (const c of b) {
      expect(c.code, `sleep ${c.sleep}`).toBe(c.sleep >= 5 ? 0 : 200);
      expect(Math.abs(c.total - Math.min(c.sleep, 5))).toBeLessThan(0.5);
    }
    expect(stdout).toMatch(/serially: 24 s\. {2}all at once: 7\.\d s, the slowest call\./);
    expect(stdout).toMatch(/with a 5 s timeout: 5\.\d s; the calls sleeping 5 and 7 s ended as code=0 at 5 s/);
  });
});
