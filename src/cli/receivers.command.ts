import { readFile } from 'node:fs/promises';
import type { Schemas } from '../client/api.client.js';
import type { CliApi } from './api.client.js';
import { UsageError, type CliArgs } from './cli.args.js';
import type { Output } from './cli.commands.js';
import { ms, table } from './cli.format.js';

/** A receiver as the list, the page or a change answers it (secrets and figures on the page and after a change). */
type ReceiverView = Omit<Schemas['ReceiverListItemDto'], 'health'> & {
  secrets?: Schemas['SecretDto'][];
  figures?: Schemas['ReceiverFiguresDto'];
  auth?: Schemas['ReceiverAuthDto'] | null;
  tls?: Schemas['ReceiverTlsDto'] | null;
};

/** `callbacks receivers put|list|show|rotate|delete|portal`. */
export async function receivers(api: CliApi, args: CliArgs, io: Output): Promise<number> {
  const [sub, name] = args.positionals;
  if (sub === 'list') {
    const items: ReceiverView[] = [];
    let cursor: string | null = '';
    do {
      const page: Schemas['ReceiverPageDto'] = await api.call(
        api.client.GET('/v1/receivers', { params: { query: { limit: '1000', ...(cursor ? { cursor } : {}) } } }),
      );
      items.push(...page.items);
      cursor = page.nextCursor;
    } while (cursor);
    if (args.json) return (io.out(JSON.stringify(items)), 0);
    io.out(
      table(
        ['name', 'url', 'state', 'description'],
        items.map((r) => [r.name, r.url, r.disabled ? 'disabled' : 'enabled', r.description]),
      ),
    );
    return 0;
  }
  if (!['put', 'show', 'rotate', 'delete', 'portal', 'test'].includes(sub ?? '')) {
    throw new UsageError('receivers needs put <name> [settings], list, show <name>, test <name>, rotate <name>, delete <name> or portal <name>');
  }
  if (!name) throw new UsageError(`receivers ${sub} needs a receiver name`);
  if (sub === 'portal') return portal(api, args, name, io);
  if (sub === 'test') return testCall(api, args, name, io);
  if (sub === 'delete') {
    const r = await api.call(api.client.DELETE('/v1/receivers/{name}', { params: { path: { name } } }));
    if (args.json) return (io.out(JSON.stringify(r)), 0);
    const rest = r.task ? `; the rest are being cancelled by task ${r.task.id} (GET /v1/tasks/${r.task.id})` : '';
    io.out(`deleted receiver ${r.name}; ${r.cancelledCallbacks} pending callback(s) cancelled${rest}`);
    return 0;
  }
  let r: ReceiverView;
  const params = { path: { name } };
  // The body goes as the flags and file give it: the service validates it and says what is wrong.
  if (sub === 'put') r = await api.call(api.client.PUT('/v1/receivers/{name}', { params, body: (await putBody(args)) as Schemas['PutReceiverDto'] }));
  else if (sub === 'rotate') r = await api.call(api.client.POST('/v1/receivers/{name}/secret/rotate', { params }));
  else {
    const since = args.sinceSet ? new Date(Date.now() - args.sinceMs).toISOString() : undefined;
    r = await api.call(api.client.GET('/v1/receivers/{name}', { params: { ...params, query: since ? { since } : {} } }));
  }
  if (args.json) return (io.out(JSON.stringify(r)), 0);
  io.out(describe(r));
  return 0;
}

/** Mints a portal session (prints its link: hand it to the receiver), or with --revoke ends every session of the receiver. */
async function portal(api: CliApi, args: CliArgs, name: string, io: Output): Promise<number> {
  const params = { path: { name } };
  if (args.portal.revoke) {
    const r = await api.call(api.client.DELETE('/v1/receivers/{name}/portal-sessions', { params }));
    io.out(args.json ? JSON.stringify(r) : `revoked ${r.revoked} portal session(s) of ${r.receiver}`);
    return 0;
  }
  const { ttlSeconds, capabilities } = args.portal;
  // As given: the service validates them and says what is wrong.
  const body = { ...(ttlSeconds !== undefined && { ttlSeconds }), ...(capabilities && { capabilities }) } as Schemas['CreatePortalSessionDto'];
  const s = await api.call(api.client.POST('/v1/receivers/{name}/portal-sessions', { params, body }));
  if (args.json) return (io.out(JSON.stringify(s)), 0);
  io.out(s.url);
  io.err(`portal of ${name} (${s.capabilities.join(', ')}) until ${s.expiresAt}; revoke with: callbacks receivers portal ${name} --revoke\n`);
  return 0;
}

/** One signed example call to the receiver now (POST /v1/receivers/{name}/test); exit 1 when it did not succeed. */
async function testCall(api: CliApi, args: CliArgs, name: string, io: Output): Promise<number> {
  const a = await api.call(api.client.POST('/v1/receivers/{name}/test', { params: { path: { name } } }));
  if (args.json) io.out(JSON.stringify(a));
  else {
    const auth = a.auth ? `, ${a.auth} auth${a.phases.tokenMs !== undefined ? ` (token ${ms(a.phases.tokenMs)})` : ''}` : '';
    io.out(`${a.ok ? 'ok' : 'failed'}: ${a.statusCode ?? a.outcome ?? 'not sent'} in ${ms(a.durationMs)}${auth} → ${a.url}${a.error ? `\n${a.error}` : ''}`);
    if (a.responseBody) io.out(a.responseBody);
  }
  return a.ok ? 0 : 1;
}

/** `auth` and `tls` from the files the flags name (PEM read as text; the service checks them). */
async function credentialFlags(f: CliArgs['receiver']): Promise<Record<string, unknown>> {
  const out: Record<string, unknown> = {};
  if (f.authFile) {
    const raw = f.authFile === '-' ? await readStdinText() : await readFile(f.authFile, 'utf8');
    try {
      out.auth = JSON.parse(raw);
    } catch (error) {
      throw new UsageError(`${f.authFile} is not JSON: ${(error as Error).message}`);
    }
  }
  const tls: Record<string, string> = {};
  if (f.clientCertFile) tls.clientCertificate = await readFile(f.clientCertFile, 'utf8');
  if (f.clientKeyFile) tls.clientKey = await readFile(f.clientKeyFile, 'utf8');
  if (f.caFile) tls.ca = await readFile(f.caFile, 'utf8');
  if (Object.keys(tls).length > 0) out.tls = tls;
  return out;
}

async function putBody(args: CliArgs): Promise<Record<string, unknown>> {
  let body: Record<string, unknown> = {};
  const { file, authFile, clientCertFile, clientKeyFile, caFile, ...flags } = args.receiver;
  if (file) {
    const raw = file === '-' ? await readStdinText() : await readFile(file, 'utf8');
    try {
      body = JSON.parse(raw);
    } catch (error) {
      throw new UsageError(`${file} is not JSON: ${(error as Error).message}`);
    }
    if (typeof body !== 'object' || body === null || Array.isArray(body)) throw new UsageError(`${file} must hold a JSON object`);
  }
  for (const [k, v] of Object.entries(flags)) if (v !== undefined) body[k] = v;
  return { ...body, ...(await credentialFlags({ authFile, clientCertFile, clientKeyFile, caFile })) };
}

function describe(r: ReceiverView): string {
  const lines = [
    `receiver  ${r.name}${r.description ? `  (${r.description})` : ''}`,
    `url       ${r.url ?? '-'}`,
    `state     ${r.disabled ? `disabled: ${r.disabledReason ?? ''}` : 'enabled'}${r.failingSince ? `  (failing since ${r.failingSince})` : ''}`,
    `settings  timeout ${r.timeoutMs ?? '-'} ms, max attempts ${r.maxAttempts ?? '-'}, retry delays ${r.retryDelaysMs.length ? r.retryDelaysMs.join(',') : '-'}`,
  ];
  if (Object.keys(r.headers).length > 0)
    lines.push(
      `headers   ${Object.entries(r.headers)
        .map(([k, v]) => `${k}: ${v}`)
        .join('; ')}`,
    );
  if (r.auth)
    lines.push(
      `auth      ${Object.entries(r.auth)
        .map(([k, v]) => `${k}=${v}`)
        .join(' ')}`,
    );
  if (r.tls) {
    const cert = r.tls.clientCertificate
      ? `client certificate ${r.tls.clientCertificate.subject} until ${r.tls.clientCertificate.notAfter}, key ${r.tls.clientKey}`
      : 'no client certificate';
    lines.push(`tls       ${cert}${r.tls.ca ? `; ca ${r.tls.ca.map((c) => c.subject).join(', ')}` : ''}`);
  }
  if (r.secrets) {
    lines.push(
      '',
      table(
        ['secret', 'created', 'expires'],
        r.secrets.map((s) => [s.secret, s.createdAt, s.expiresAt ?? 'current']),
      ),
    );
  }
  const f = r.figures;
  if (f) {
    const outcomes =
      Object.entries(f.outcomes)
        .map(([k, n]) => `${k} ${n}`)
        .join(', ') || 'none';
    lines.push(
      '',
      `since ${f.since}: ${f.pending} pending, ${f.inFlight} in flight, ${f.held} held; ${f.attempts} attempts (${outcomes})`,
      `latency   p50 ${ms(f.latency.p50)}, p90 ${ms(f.latency.p90)}, p99 ${ms(f.latency.p99)}`,
    );
  }
  return lines.join('\n');
}

async function readStdinText(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const c of process.stdin) chunks.push(c as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}
