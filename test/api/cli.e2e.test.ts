import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { run } from '../../src/cli/cli.run.js';
import { TestCertificates } from '../support/certificates.js';
import { Receiver } from '../support/receiver.js';
import { startTestService, TEST_KEY, waitFor, type TestService } from '../support/service.js';

/** The `callbacks` bin as package.json declares it (built by `npm run build`, which `npm test` runs first). */
const BIN = (JSON.parse(readFileSync('package.json', 'utf8')) as { bin: Record<string, string> }).bin.callbacks;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

type Run = { code: number | null; stdout: string; stderr: string };

describe('callbacks CLI', () => {
  let service: TestService;
  let receiver: Receiver;
  let dir: string;

  beforeAll(async () => {
    expect(existsSync(BIN), `${BIN} missing: run npm run build`).toBe(true);
    [service, receiver, dir] = await Promise.all([startTestService(), Receiver.start(), mkdtemp(join(tmpdir(), 'cli-test-'))]);
  });
  afterAll(async () => {
    await service?.dispose();
    await receiver?.close();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  /**
   * Runs the CLI against the test service, as its bin does (src/cli/main.ts calls the
   * same `run` with the process's argv, env and streams) but in this process: one
   * test below runs the bin itself. A throw is the bin's crash: exit code 1.
   */
  async function cli(args: string[], env: Record<string, string | undefined> = {}): Promise<Run> {
    let stdout = '';
    let stderr = '';
    const io = { out: (text: string) => void (stdout += text.endsWith('\n') ? text : `${text}\n`), err: (text: string) => void (stderr += text), tty: false };
    try {
      const code = await run(args, { PATH: process.env.PATH, CALLBACKS_URL: service.url, CALLBACKS_API_KEY: TEST_KEY, ...env }, io);
      return { code, stdout, stderr };
    } catch (error) {
      return { code: 1, stdout, stderr: `${stderr}${String(error)}` };
    }
  }

  async function batchFile(name: string, content: unknown): Promise<string> {
    const path = join(dir, name);
    await writeFile(path, typeof content === 'string' ? content : JSON.stringify(content));
    return path;
  }

  it('should send a batch file and print only its id', async () => {
    const file = await batchFile('plain.json', [{ url: `${receiver.url}/plain?sleep=10`, externalId: 'p1' }, { url: `${receiver.url}/plain2` }]);
    const run = await cli(['send', file]);
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    const id = run.stdout.trim();
    expect(id).toMatch(UUID);
    const batch = await service.apiJson(`/v1/batches/${id}`);
    expect(batch.total).toBe(2);
  });

  it('should wait with a progress bar, then print the sequence diagram of every call', async () => {
    const sleeps = [300, 100, 200];
    const file = await batchFile('wait.json', { label: 'cli', callbacks: sleeps.map((s) => ({ url: `${receiver.url}/w?sleep=${s}` })) });
    const started = Date.now();
    const run = await cli(['send', file, '--wait']);
    expect(run.code).toBe(0);
    expect(Date.now() - started).toBeLessThan(5000);
    const [id, ...diagram] = run.stdout.trim().split('\n');
    expect(id).toMatch(UUID);
    expect(run.stderr.trim().split('\n').at(-1)).toMatch(/^\[#{30}\] 3\/3 done {2}\(3 ok, 0 failed, 0 open\) {2}\d+\.\d s$/);
    for (const s of sleeps) {
      const i = diagram.findIndex((l) => l.includes(`/w?sleep=${s} :: code=200`));
      expect(i, `line of the ${s} ms call`).toBeGreaterThanOrEqual(0);
      expect(diagram[i]).toMatch(/start=\d\.\d{3}, end=\d\.\d{3}, total=0\.\d{3}\)$/);
      expect(diagram[i + 1]).toMatch(/^\[ *=+ *\]$/);
      expect(diagram[i + 1]).toHaveLength(102);
    }
    expect(diagram.at(-1)).toMatch(/^3 calls, span 0\.\d{3} s/);
    expect(receiver.requests.filter((r) => r.url.startsWith('/w?')).length).toBe(3);
  });

  it("should show a batch's and a callback's status, and say when an id is unknown", async () => {
    const file = await batchFile('status.json', { callbacks: [{ url: `${receiver.url}/s?code=500`, maxAttempts: 1, externalId: 'bad' }] });
    const sent = await cli(['send', file, '--wait', '--json']);
    const id = sent.stdout.split('\n')[0];
    const status = await cli(['status', id]);
    expect(status.code).toBe(0);
    expect(status.stdout).toMatch(new RegExp(`batch +${id}`));
    expect(status.stdout).toMatch(/status +completed/);
    expect(status.stdout).toMatch(/1\/1 done {2}\(0 ok, 1 failed, 0 open\)/);

    const callbackId = (await service.apiJson(`/v1/batches/${id}/callbacks`)).items[0].id;
    const cb = await cli(['status', callbackId]);
    expect(cb.code).toBe(0);
    expect(cb.stdout).toMatch(/status +failed/);
    expect(cb.stdout).toMatch(/^ *1 +\S+ +http_error +500 +\d+ ms/m);

    const json = JSON.parse((await cli(['status', id, '--json'])).stdout);
    expect(json).toMatchObject({ id, status: 'completed', counts: { failed: 1 } });

    const missing = await cli(['status', '01a22c5c-0000-7000-8000-000000000000']);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toMatch(/not found \(404 not_found\)/);
  });

  it('should create, list and revoke keys', async () => {
    const created = await cli(['keys', 'create', 'ci-bot']);
    expect(created.code).toBe(0);
    const key = created.stdout.trim();
    expect(key).toMatch(/^cbk_\S{20,}$/);
    expect(created.stderr).toMatch(/"ci-bot" created: shown once/);
    expect((await service.api('/v1/batches', { key })).status).toBe(200);

    const forbidden = await cli(['keys', 'list'], { CALLBACKS_API_KEY: key });
    expect(forbidden.code).toBe(1);
    expect(forbidden.stderr).toMatch(/admin key \(403 forbidden\)/);

    const list = await cli(['keys', 'list']);
    expect(list.stdout).toMatch(/ci-bot +cbk_\S+… +no/);
    const row = (JSON.parse((await cli(['keys', 'list', '--json'])).stdout) as Array<{ id: string; name: string; revokedAt: string | null }>).find(
      (k) => k.name === 'ci-bot',
    )!;
    expect(row.revokedAt).toBeNull();

    const revoked = await cli(['keys', 'revoke', row.id]);
    expect(revoked.code).toBe(0);
    expect(revoked.stdout.trim()).toBe(`revoked ${row.id}`);
    const after = (JSON.parse((await cli(['keys', 'list', '--json'])).stdout) as Array<{ id: string; revokedAt: string | null }>).find((k) => k.id === row.id)!;
    expect(after.revokedAt).not.toBeNull();
  });

  it('should print latency history per bucket', async () => {
    const run = await cli(['history', '--since', '1h']);
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(/^latency, 1m buckets, /);
    expect(run.stdout).toMatch(/bucket start +calls +ok +failed +p50 +p90 +p99 +max/);
    const host = new URL(receiver.url).origin;
    const json = JSON.parse((await cli(['history', '--host', host, '--json'])).stdout);
    const total = json.items.reduce((n: number, b: { count: number }) => n + b.count, 0);
    expect(total).toBeGreaterThanOrEqual(4);
  });

  it('should explain usage, a missing key and a broken file with exit codes 2, 1, 2', async () => {
    const usage = await cli(['frobnicate']);
    expect(usage.code).toBe(2);
    expect(usage.stderr).toMatch(/unknown command: frobnicate[\s\S]*usage: callbacks/);
    const noKey = await cli(['status', '01a22c5c-0000-7000-8000-000000000000'], { CALLBACKS_API_KEY: undefined });
    expect(noKey.code).toBe(1);
    expect(noKey.stderr).toMatch(/missing API key.*--key or set CALLBACKS_API_KEY.*401 unauthorized/);
    const broken = await cli(['send', await batchFile('broken.json', '{"callbacks": [')]);
    expect(broken.code).toBe(2);
    expect(broken.stderr).toMatch(/broken\.json is not JSON/);
    const invalid = await cli(['send', await batchFile('invalid.json', { callbacks: [{ url: 'not a url' }] })]);
    expect(invalid.code).toBe(1);
    expect(invalid.stderr).toMatch(/\(400 validation_failed\)/);
    expect((await cli(['--help'])).stdout).toMatch(/^callbacks — /);
  });

  it('should run as the bin itself, as npx callbacks runs it after a build (executable, by its shebang)', () => {
    const run = spawnSync(resolve(BIN), ['--help'], { env: { PATH: process.env.PATH }, encoding: 'utf8', timeout: 20_000 });
    expect(run.error, 'the build leaves the bin executable (postbuild)').toBeUndefined();
    expect(run.status).toBe(0);
    expect(run.stdout).toMatch(/^callbacks — /);
  });

  it('should put, list, show, rotate and delete a receiver', async () => {
    const settings = await batchFile('receiver.json', { headers: { 'x-shop': '42' }, retryDelaysMs: [0] });
    const put = await cli([
      'receivers',
      'put',
      'merchant-42',
      '--endpoint',
      `${receiver.url}/m42`,
      '--description',
      'shop 42',
      '--timeout-ms',
      '3000',
      '--file',
      settings,
    ]);
    expect(put.stderr).toBe('');
    expect(put.code).toBe(0);
    expect(put.stdout).toMatch(/^receiver {2}merchant-42 {2}\(shop 42\)$/m);
    expect(put.stdout).toMatch(/timeout 3000 ms/);
    expect(put.stdout).toMatch(/x-shop: 42/);
    const [secret] = /whsec_[A-Za-z0-9+/=]+/.exec(put.stdout)!;

    const list = await cli(['receivers', 'list']);
    expect(list.stdout).toMatch(/merchant-42\s+http:\/\/127\.0\.0\.1:\d+\/m42\s+enabled\s+shop 42/);

    const disabled = await cli(['receivers', 'put', 'merchant-42', '--disable', '--json']);
    expect(JSON.parse(disabled.stdout)).toMatchObject({ disabled: true, secrets: [{ secret }] });

    const show = await cli(['receivers', 'show', 'merchant-42', '--since', '1h']);
    expect(show.code).toBe(0);
    expect(show.stdout).toMatch(/state {5}disabled: /);
    expect(show.stdout).toMatch(/0 pending, 0 in flight, 0 held; 0 attempts \(none\)/);

    const rotated = await cli(['receivers', 'rotate', 'merchant-42', '--json']);
    const secrets = JSON.parse(rotated.stdout).secrets.map((s: { secret: string }) => s.secret);
    expect(secrets).toHaveLength(2);
    expect(secrets[1]).toBe(secret);

    const deleted = await cli(['receivers', 'delete', 'merchant-42']);
    expect(deleted.stdout).toMatch(/deleted receiver merchant-42; 0 pending callback\(s\) cancelled/);
    const gone = await cli(['receivers', 'show', 'merchant-42']);
    expect(gone.code).toBe(1);
    expect(gone.stderr).toMatch(/receiver not found/);
    expect((await cli(['receivers', 'put'])).code).toBe(2);
    expect((await cli(['receivers', 'put', 'x', '--disable', '--enable'])).code).toBe(2);
  });

  it("should set a receiver's credentials from files (--auth-file, --client-cert, --client-key, --ca), show them write-only, and test it", async () => {
    const certs = new TestCertificates();
    try {
      const ca = certs.authority('cli-ca');
      const client = certs.signed(ca, 'cli-client', { clientAuth: true });
      const auth = await batchFile('auth.json', { type: 'basic', username: 'cli-user', password: 'cli-password-0123' });
      const put = await cli([
        'receivers',
        'put',
        'cli-auth',
        '--endpoint',
        `${receiver.url}/auth`,
        '--auth-file',
        auth,
        '--client-cert',
        client.certFile,
        '--client-key',
        client.keyFile,
        '--ca',
        ca.certFile,
      ]);
      expect(put.stderr).toBe('');
      expect(put.stdout).toMatch(/^auth {6}type=basic username=cli-user password=set$/m);
      expect(put.stdout).toMatch(/^tls {7}client certificate CN=cli-client until .*, key set; ca CN=cli-ca$/m);
      expect(put.stdout).not.toContain('cli-password-0123');
      // the test receiver speaks plain http: tls has nothing to do there, basic goes out
      await cli(['receivers', 'put', 'cli-auth', '--auth-file', auth]);
      const tested = await cli(['receivers', 'test', 'cli-auth']);
      expect(tested.code).toBe(0);
      expect(tested.stdout).toMatch(/^ok: 200 in .*, basic auth → http:\/\/127\.0\.0\.1:\d+\/auth$/m);
      // the receiver records a request when its connection closes, which may be after the answer came back
      const sent = await waitFor(() => receiver.requests.find((r) => r.url === '/auth'));
      expect(sent.headers.authorization).toBe(`Basic ${Buffer.from('cli-user:cli-password-0123').toString('base64')}`);
    } finally {
      certs.remove();
    }
  });

  it("should print a link to a receiver's portal, and revoke its sessions", async () => {
    expect((await cli(['receivers', 'put', 'portal-shop', '--endpoint', `${receiver.url}/p`])).code).toBe(0);
    const minted = await cli(['receivers', 'portal', 'portal-shop', '--ttl', '2h', '--capabilities', 'read,replay']);
    expect(minted.code, minted.stderr).toBe(0);
    const url = minted.stdout.trim();
    expect(url.startsWith(`${service.url}/portal/session?token=cbp_`)).toBe(true);
    expect(minted.stderr).toMatch(/^portal of portal-shop \(read, replay\) until \S+; revoke with: callbacks receivers portal portal-shop --revoke$/m);
    expect((await fetch(url, { redirect: 'manual' })).status).toBe(303);
    const json = JSON.parse((await cli(['receivers', 'portal', 'portal-shop', '--json'])).stdout);
    expect(json.capabilities).toEqual(['read']);
    expect(Math.abs(Date.parse(json.expiresAt) - Date.now() - 3_600_000)).toBeLessThan(10_000);
    const bad = await cli(['receivers', 'portal', 'portal-shop', '--capabilities', 'read,admin']);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toMatch(/\(400 validation_failed\)/);
    expect((await cli(['receivers', 'portal', 'portal-shop', '--ttl', 'soon'])).code).toBe(2);
    const revoked = await cli(['receivers', 'portal', 'portal-shop', '--revoke']);
    expect(revoked.stdout).toBe('revoked 2 portal session(s) of portal-shop\n');
    expect((await fetch(url, { redirect: 'manual' })).status).toBe(401);
  });

  it('should put and list event types, and send an event to the receivers subscribed', async () => {
    const schema = await batchFile('schema.json', { type: 'object', properties: { amount: { type: 'integer' } }, required: ['amount'] });
    const put = await cli(['event-types', 'put', 'order.paid', '--schema', schema, '--description', 'an order was paid']);
    expect(put.stderr).toBe('');
    expect(put.stdout.trim()).toBe('order.paid: payloads checked against its schema');
    expect((await cli(['event-types', 'put', 'order.old', '--deprecated'])).stdout.trim()).toBe('order.old (deprecated): any payload');
    const list = await cli(['event-types', 'list']);
    expect(list.stdout).toMatch(/order\.old\s+no\s+yes/);
    expect(list.stdout).toMatch(/order\.paid\s+yes\s+an order was paid/);

    const subscribed = await batchFile('subscribed.json', { eventTypes: ['order.*'] });
    expect((await cli(['receivers', 'put', 'shop-7', '--endpoint', `${receiver.url}/shop-7`, '--file', subscribed])).code).toBe(0);
    const sent = await cli(['events', 'send', 'order.paid', await batchFile('payload.json', { amount: 42 }), '--id', 'evt-cli-1']);
    expect(sent.code).toBe(0);
    expect(sent.stdout.trim()).toBe('evt-cli-1');
    expect(sent.stderr).toMatch(/^order\.paid: 1 delivery \(batch [0-9a-f-]{36}\)$/m);
    await waitFor(() => receiver.requests.some((r) => r.url === '/shop-7' && r.headers['webhook-event-id'] === 'evt-cli-1'));

    const refused = await cli(['events', 'send', 'order.paid', await batchFile('bad-payload.json', { amount: 'x' })]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/payload at \/amount must be integer/);
    expect((await cli(['events', 'send', 'order.paid'])).code).toBe(2);
    expect((await cli(['event-types', 'put'])).code).toBe(2);
  });

  it("should count, start, show and refuse to cancel a finished recovery of a receiver's failed callbacks", async () => {
    // answers 503 to each webhook-id's first request: with one attempt allowed, both fail; sent again, they arrive
    expect((await cli(['receivers', 'put', 'shop-9', '--endpoint', `${receiver.url}/shop-9?failTimes=1`, '--max-attempts', '1'])).code).toBe(0);
    const sent = await cli(['send', await batchFile('shop-9.json', [{ receiver: 'shop-9' }, { receiver: 'shop-9' }]), '--wait']);
    expect(sent.code).toBe(0);
    const dry = await cli(['recover', '--receiver', 'shop-9', '--since', '1h', '--dry-run']);
    expect(dry.stdout.trim()).toBe('2 callbacks would be sent again');
    const started = await cli(['recover', '--receiver', 'shop-9', '--since', '1h', '--wait']);
    expect(started.code).toBe(0);
    const id = started.stdout.trim();
    expect(id).toMatch(/^[0-9a-f-]{36}$/);
    expect(started.stderr.trim().split('\n').at(-1)).toMatch(/^requeued 2\/2, delivered \d, failed 0, pending \d \(done\)$/);
    // each once more: 2 refused, then 2 answered
    await waitFor(() => receiver.requests.filter((r) => r.url.startsWith('/shop-9')).length === 4 || undefined);
    const shown = await cli(['recover', 'show', id]);
    expect(shown.stdout).toMatch(/matches {3}failed callbacks of receiver shop-9/);
    const cancel = await cli(['recover', 'cancel', id]);
    expect(cancel.code).toBe(1);
    expect(cancel.stderr).toMatch(/a done recovery cannot be cancelled .*\(409 conflict\)/);
    const unscoped = await cli(['recover']);
    expect(unscoped.code).toBe(1);
    expect(unscoped.stderr).toMatch(/give a receiver, host, batch or event, or a window/);
    expect((await cli(['recover', 'nonsense'])).code).toBe(2);
  });
});
